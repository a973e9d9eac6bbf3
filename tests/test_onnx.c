#include "test_support.h"
int main(void) { return 0; }
