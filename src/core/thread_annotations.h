// Clang's thread-safety annotations (-Wthread-safety, on in every clang build); no-ops
// elsewhere.
#pragma once

#if defined(__clang__)
#define BERTH_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define BERTH_THREAD_ANNOTATION(x)
#endif

// Abseil (through gRPC's headers) defines some of the same names with the same meaning; ours
// win where both are seen.
#undef CAPABILITY
#undef SCOPED_CAPABILITY
#undef GUARDED_BY
#undef REQUIRES
#undef EXCLUDES
#undef ACQUIRE
#undef RELEASE
#define CAPABILITY(x) BERTH_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY BERTH_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) BERTH_THREAD_ANNOTATION(guarded_by(x))
#define REQUIRES(...) BERTH_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) BERTH_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) BERTH_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) BERTH_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
