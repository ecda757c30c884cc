// Placeholder so the package manifest resolves while MemoryCacheTests is being written; replaced by the real module.
