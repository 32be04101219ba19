// Clang's thread-safety annotations (-Wthread-safety in the tsan preset); no-ops elsewhere.
#pragma once

#if defined(__clang__)
#define BERTH_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define BERTH_THREAD_ANNOTATION(x)
#endif

#define GUARDED_BY(x) BERTH_THREAD_ANNOTATION(guarded_by(x))
#define REQUIRES(...) BERTH_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) BERTH_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
