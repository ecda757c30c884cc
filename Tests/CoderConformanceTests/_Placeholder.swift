// Placeholder so the package manifest resolves while CoderConformanceTests is being written; replaced by the real module.
