/* Symbol export macro: the library is built with hidden visibility and only
 * what carries CLF_API is part of the ABI. */
#ifndef CLFUSE_EXPORT_H
#define CLFUSE_EXPORT_H

#if defined(_WIN32) && defined(CLFUSE_BUILDING)
#define CLF_API __declspec(dllexport)
#elif defined(__GNUC__) && defined(CLFUSE_BUILDING)
#define CLF_API __attribute__((visibility("default")))
#else
#define CLF_API
#endif

#endif
