"""The TREC RAG track's own prompts, word for word, and parsers that read what the track's tools read.

The texts are data taken from the track's tools (Apache-2.0), each with its source:

- nuggetizer's nugget-assignment prompts, castorini/nuggetizer
  ``src/nuggetizer/prompts/prompt_templates/assigner_template.yaml`` (3 labels) and
  ``assigner_2grade_template.yaml`` (2 labels): a system message and a user message whose nugget list is
  the Python ``str()`` of the list of nugget texts (``prompts/service.py``, ``create_assign_messages``);
- UMBRELA's zero-shot relevance prompt, castorini/umbrela
  ``src/umbrela/prompts/prompt_templates/qrel_zeroshot_bing.yaml`` (no system message).

The placeholders are renamed to the harness's (``{count}`` for ``{num_nuggets}``, ``{context}`` for the
passage, ``{query_title}`` for UMBRELA's query); the words are the track's. The harness's own paraphrases
stay in :mod:`exam_harness.llm.prompts` under their names (``nugget-assignment``, ``umbrela``).

Parsers:

- :func:`parse_nuggetizer_labels` reads an assignment answer as nuggetizer's ``_assign_window_sync`` does
  (``models/nuggetizer.py``): code fences removed, the rest a Python literal (``ast.literal_eval``) that is
  a list with one entry per nugget (else the whole call is malformed and asked again), each entry
  lowercased. :func:`assignment_grades` then grades each nugget alone, as nuggetizer's
  ``calculate_nugget_scores`` counts it: one of the three labels is its grade, any other (``partial support``
  with a space, ``chief financial officer``) is returned as None, and the grader records it as grade 0 read
  by a fallback rule (``FALLBACK_STRAY_LABEL``), which nuggetizer scores it.
- :func:`parse_umbrela_reference` reads UMBRELA's answer as umbrela's ``parse_fewshot_response``
  (``utils/common_utils.py``) does: the first of its answer forms that occurs, at its last occurrence
  (``##final score: 2``, ``final score is 3``, ``"O": 1``, ``score of 2``, ... and at last any digit 0-3);
  where umbrela falls back to 0 for an answer with no digit, the harness fails the pair.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from exam_harness.llm.prompts import PromptTemplate


@dataclass(frozen=True)
class TrackPrompt:
    """A track prompt: its system message (``""``: none), the user message template and where it comes from."""

    template: PromptTemplate
    system: str
    source: str


# umbrela's template holds no system message; its OpenAI judge sends this one before the prompt
# (src/umbrela/gpt_judge.py, GPTJudge.run_gpt), which is what an OpenAI-compatible chat endpoint is sent
UMBRELA_SYSTEM = "You are a helpful assistant."

NUGGETIZER_ASSIGNER_SYSTEM = ("You are NuggetizeAssignerLLM, an intelligent assistant that can label a list of atomic "
                              "nuggets based on if they are captured by a given passage.")

NUGGETIZER_ASSIGN = TrackPrompt(
    PromptTemplate(
        "NuggetizerAssignment",
        "Based on the query and passage, label each of the {count} nuggets either as support, partial_support, or "
        "not_support using the following criteria. A nugget that is fully captured in the passage should be "
        "labeled as support. A nugget that is partially captured in the passage should be labeled as "
        "partial_support. If the nugget is not captured at all, label it as not_support. Return the list of "
        "labels in a Pythonic list format (type: List[str]). The list should be in the same order as the input "
        "nuggets. Make sure to provide a label for each nugget.\n"
        "\n"
        "Search Query: {query}\n"
        "Passage: {context}\n"
        "Nugget List: {nuggets}\n"
        "Only return the list of labels (List[str]). Do not explain.\n"
        "Labels:",
        "assignment",
        max_grade=2,
    ),
    NUGGETIZER_ASSIGNER_SYSTEM,
    "castorini/nuggetizer src/nuggetizer/prompts/prompt_templates/assigner_template.yaml",
)

NUGGETIZER_ASSIGN_2 = TrackPrompt(
    PromptTemplate(
        "NuggetizerAssignment2",
        "Based on the query and passage, label each of the {count} nuggets either as support or not_support "
        "using the following criteria. A nugget that is fully captured in the passage should be labeled as "
        "support; otherwise, label them as not_support. Return the list of labels in a Pythonic list format "
        "(type: List[str]). The list should be in the same order as the input nuggets. Make sure to provide a "
        "label for each nugget.\n"
        "\n"
        "Search Query: {query}\n"
        "Passage: {context}\n"
        "Nugget List: {nuggets}\n"
        "Only return the list of labels (List[str]). Do not explain.\n"
        "Labels:",
        "assignment",
        max_grade=2,
    ),
    NUGGETIZER_ASSIGNER_SYSTEM,
    "castorini/nuggetizer src/nuggetizer/prompts/prompt_templates/assigner_2grade_template.yaml",
)

UMBRELA_ZEROSHOT = TrackPrompt(
    PromptTemplate(
        "UmbrelaZeroShot",
        "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
        "meanings:\n"
        "0 = represent that the passage has nothing to do with the query, \n"
        "1 = represents that the passage seems related to the query but does not answer it, \n"
        "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or "
        "hidden amongst extraneous information and \n"
        "3 = represents that the passage is dedicated to the query and contains the exact answer.\n"
        "\n"
        "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not "
        "completely, category 2 if passage presents something very important related to the entire topic but "
        "also has some extra information and category 3 if the passage only and entirely refers to the topic. "
        "If none of the above satisfies give it category 0.\n"
        "\n"
        "Query: {query_title}\n"
        "Passage: {context}\n"
        "\n"
        "Split this problem into steps:\n"
        "Consider the underlying intent of the search.\n"
        "Measure how well the content matches a likely intent of the query (M).\n"
        "Measure how trustworthy the passage is (T).\n"
        "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final "
        "score must be an integer value only.\n"
        "Do not provide any code in result. Provide each score in the format of: ##final score: score without "
        "providing any reasoning.",
        "umbrela",
        max_grade=3,
        needs_bank=False,
    ),
    UMBRELA_SYSTEM,
    "castorini/umbrela src/umbrela/prompts/prompt_templates/qrel_zeroshot_bing.yaml",
)

TRACK_PROMPTS: dict[str, TrackPrompt] = {p.template.prompt_class: p
                                         for p in (NUGGETIZER_ASSIGN, NUGGETIZER_ASSIGN_2, UMBRELA_ZEROSHOT)}

ASSIGNMENT_GRADES = {"support": 2, "partial_support": 1, "not_support": 0}


def nuggetizer_nugget_list(texts: list[str]) -> str:
    """The nugget list as nuggetizer's prompt holds it: the Python ``str()`` of the list of texts."""
    return str(list(texts))


def parse_nuggetizer_labels(response: str, count: int) -> list[str] | None:
    """The lowercased labels of an assignment answer, one per nugget, or None when nuggetizer would
    not read it (no Python literal list of ``count`` strings once the code fences are removed)."""
    cleaned = response.replace("```python", "").replace("```", "").strip()
    try:
        value = ast.literal_eval(cleaned)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (list, tuple)) or len(value) != count or not all(isinstance(v, str) for v in value):
        return None
    return [v.lower() for v in value]


def assignment_grades(labels: list[str], allowed: tuple[str, ...]) -> list[int | None]:
    """Each label's grade (support 2, partial_support 1, not_support 0); None for a label outside
    ``allowed``: that nugget alone fails."""
    return [ASSIGNMENT_GRADES[label] if label in allowed else None for label in labels]


# umbrela's answer forms in its order of preference (utils/common_utils.py, parse_fewshot_response): the
# first form found wins, at its last occurrence in the lowercased answer
_UMBRELA_FORMS = tuple(re.compile(form, re.IGNORECASE | re.MULTILINE | re.DOTALL) for form in (
    r'"o"\s*[:-=]?\s*([0-3])', r"'o'\s*[:-=]?\s*([0-3])", r"o\s*[:-=]?\s*([0-3])",
    r'"overall_score"\s*[:-=]?\s*([0-3])', r'"overall"\s*[:-=]?\s*([0-3])', r'"overall score"\s*[:-=]?\s*([0-3])',
    r'"final score"\s*[:-=]?\s*([0-3])', r"final score\s*[:-=]?\s*([0-3])", r"final score is ([0-3])",
    r'"final_score"\s*[:-=]?\s*([0-3])', r'"score"\s*[:-=]?\s*([0-3])', r'"o_score"\s*[:-=]?\s*([0-3])',
    r"output score is ([0-3])", r"score is ([0-3])", r"score of\s+([0-3])",
    r"assign(?:ing)?\s+(?:it\s+)?(?:a\s+)?score of\s+([0-3])",
    r"conclude(?:s|d)?\s+with\s+(?:a\s+)?score of\s+([0-3])",
    r"give(?:n)?\s+(?:it\s+)?(?:a\s+)?score of\s+([0-3])",
    r"i (?:would )?(?:give|assign)\s+(?:it\s+)?(?:a\s+)?score of\s+([0-3])",
    r"score:\s*([0-3])", r"[a-zA-Z]+\s+is\s+([0-3])\s",
    r"relevance category\s*[:-=]?\s*([0-3])", r"relevance category is ([0-3])",
    r"it falls into the category ([0-3])", r"category\s*([0-3])", r"relevance category ([0-3])",
    r"relevance category for this passage would be ([0-3])", r"the relevance category would be ([0-3])",
    r"\n*([0-3])",
))


def parse_umbrela_reference(response: str) -> int | None:
    """UMBRELA's grade 0..3 as umbrela reads it; None where umbrela finds no form (it would say 0)."""
    text = response.strip().lower()
    for form in _UMBRELA_FORMS:
        found = form.findall(text)
        if found:
            return int(found[-1])
    return None
