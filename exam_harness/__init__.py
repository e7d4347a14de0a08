"""exam-harness: a pytest-native exam-based evaluation harness for retrieval and RAG systems."""

from __future__ import annotations

__version__ = "0.1.0"
