// Placeholder so the package manifest resolves while GIFCoder is being written; replaced by the real module.
