"""Named input rules: detection, quarantine and row accounting."""
