"""The book's own Sphinx extensions (``sphinx.extra_extensions`` of ``_config.yml``)."""
