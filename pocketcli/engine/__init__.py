"""The generation engine: host-side logic shared by every runtime."""
