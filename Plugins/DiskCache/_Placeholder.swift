// Placeholder so the package manifest resolves while DiskCache is being written; replaced by the real module.
