// Placeholder so the package manifest resolves while DiskCacheTests is being written; replaced by the real module.
