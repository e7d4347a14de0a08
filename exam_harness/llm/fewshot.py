"""The method's few-shot direct grading baselines Sun_few and FaggioliB_few.

Each is its zero-shot prompt preceded by four labelled examples on two TREC DL style queries ("how
many eye drops per ml", "can you open a wells fargo account online"), one relevant and one
non-relevant passage each. The method does not reproduce the published example passages; the four
below were written for this project in their spirit: they show the model the answer format. The
papers found both few-shot variants generalise poorly; they are here for comparison.
"""

from __future__ import annotations

from exam_harness.llm.prompts import FAGGIOLI_B, SUN, direct_yes_no

# (query, passage, relevant?)
EXAMPLES: tuple[tuple[str, str, bool], ...] = (
    (
        "how many eye drops per ml",
        "A typical eye dropper releases drops of about 0.05 ml, so one millilitre of an eye solution "
        "holds roughly 20 drops. Drop size varies between bottles from about 0.03 to 0.07 ml, which "
        "puts the count anywhere between 15 and 30 drops per ml.",
        True,
    ),
    (
        "how many eye drops per ml",
        "Store your eye drops at room temperature and keep the cap closed when not in use. Do not "
        "touch the tip of the bottle to your eye or any other surface, and throw the bottle away four "
        "weeks after opening it.",
        False,
    ),
    (
        "can you open a wells fargo account online",
        "You can open most Wells Fargo checking and savings accounts online in about ten minutes. "
        "You will need your Social Security number, a government-issued ID and an opening deposit, "
        "which you can transfer from another bank account.",
        True,
    ),
    (
        "can you open a wells fargo account online",
        "Wells Fargo was founded in 1852 by Henry Wells and William Fargo to provide express and "
        "banking services to California during the gold rush. Its stagecoach became a symbol of the "
        "company.",
        False,
    ),
)


def _examples(query_label: str, question_line: str) -> str:
    blocks = []
    for query, passage, relevant in EXAMPLES:
        lines = [f"Passage: {passage}", f"{query_label}: {query}"]
        if question_line:
            lines.append(question_line)
        lines.append(f"Answer: {'Yes' if relevant else 'No'}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n\n"


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


FAGGIOLI_B_FEW = direct_yes_no(
    "FagB_few",
    _escape(_examples("Question", "")) + FAGGIOLI_B.template,
)

SUN_FEW = direct_yes_no(
    "Sun_few",
    _escape(_examples("Query", "Does the passage answer the query?")) + SUN.template,
)
