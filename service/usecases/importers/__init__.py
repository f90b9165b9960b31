"""Importers: one module per file format, each a parser (file -> records) and a loader
(records -> store, one transaction). Errors name the file and line (`ImportFailed`)."""
from __future__ import annotations

from service.usecases.importers.common import ImportConflict, ImportFailed, ImportFormatError, ImportSummary

__all__ = ["ImportConflict", "ImportFailed", "ImportFormatError", "ImportSummary"]
