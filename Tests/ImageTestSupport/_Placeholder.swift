// Placeholder so the package manifest resolves while ImageTestSupport is being written; replaced by the real module.
