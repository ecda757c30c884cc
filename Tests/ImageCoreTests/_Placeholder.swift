// Placeholder so the package manifest resolves; replaced by the real tests.
