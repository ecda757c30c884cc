#if canImport(Glibc)
    import Glibc
#endif

/// What the running test binary was built with.
public enum Sanitizers {
    /// True in a build with AddressSanitizer (`swift test --sanitize=address`, scripts/test.sh's coder run): its
    /// runtime defines `__asan_init`.
    ///
    /// For the few tests whose cost under ASan comes from an uninstrumented C library rather than from our code:
    /// they run in the plain run, and the ASan run keeps to tests whose time is spent in code it checks.
    public static let address: Bool = {
        #if canImport(Glibc)
            // RTLD_DEFAULT: the global symbol scope of the process.
            return dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
        #else
            return false
        #endif
    }()
}
