// Placeholder so the package manifest resolves while MemoryCache is being written; replaced by the real module.
