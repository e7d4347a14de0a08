"""The prompts of the method, for grading and for bank generation. Their words are constants: do not edit.

Each grading prompt is a :class:`PromptTemplate` with a class name (recorded in every grade's
provenance), a template with placeholders, and the placeholder that holds the passage, which is
the only part truncation may cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OutputKind = Literal["self_rating", "answer", "yes_no", "thomas", "assignment", "umbrela", "support"]


@dataclass(frozen=True)
class PromptTemplate:
    prompt_class: str
    template: str
    output: OutputKind
    max_grade: int = 5
    needs_bank: bool = True

    def render(self, context: str, **fields: str) -> str:
        return self.template.format(context=context, **fields)

    def split(self, **fields: str) -> tuple[str, str]:
        """Text before and after ``{context}``, so a backend can truncate the context alone."""
        marker = "\x00CONTEXT\x00"
        whole = self.template.format(context=marker, **fields)
        before, after = whole.split(marker)
        return before, after


def direct_yes_no(prompt_class: str, template: str) -> PromptTemplate:
    """A direct relevance prompt answered Yes or No (grade 0/1): the query alone, no bank needed."""
    return PromptTemplate(prompt_class, template, "yes_no", max_grade=1, needs_bank=False)


QUESTION_SELF_RATING = PromptTemplate(
    "QuestionSelfRatedUnanswerablePromptWithChoices",
    "Can the question be answered based on the available context? choose one:\n"
    "- 5: The answer is highly relevant, complete, and accurate.\n"
    "- 4: The answer is mostly relevant and complete but may have minor gaps or inaccuracies.\n"
    "- 3: The answer is partially relevant and complete, with noticeable gaps or inaccuracies.\n"
    "- 2: The answer has limited relevance and completeness, with significant gaps or inaccuracies.\n"
    "- 1: The answer is minimally relevant or complete, with substantial shortcomings.\n"
    "- 0: The answer is not relevant or complete at all.\n"
    "Question: {question}\n"
    "Context: {context}",
    "self_rating",
)

NUGGET_SELF_RATING = PromptTemplate(
    "NuggetSelfRatedPrompt",
    "Given the context, evaluate the coverage of the specified key fact (nugget). Use this scale:\n"
    "- 5: Detailed, clear coverage.\n"
    "- 4: Sufficient coverage, minor omissions.\n"
    "- 3: Mentioned, some inaccuracies or lacks detail.\n"
    "- 2: Briefly mentioned, significant omissions or inaccuracies.\n"
    "- 1: Minimally mentioned, largely inaccurate.\n"
    "- 0: Not mentioned at all.\n"
    "Key Fact: {nugget}\n"
    "Context: {context}",
    "self_rating",
)

ANSWER_EXTRACTION = PromptTemplate(
    "QuestionCompleteConciseUnanswerablePromptWithChoices",
    "provide a complete and concise answer to the question based on the context. Question: {question}\n"
    "Context: {context}",
    "answer",
    max_grade=1,
)

NUGGET_EXTRACTION = PromptTemplate(
    "NuggetExtractionPrompt",
    "Extract the passage from the text that best relates to the key fact (nugget), ensuring relevance "
    "and clarity. Key Fact: {nugget}\n"
    "Context: {context}",
    "answer",
    max_grade=1,
)

ANSWER_VERIFICATION = (
    'For the question "{question}" the correct answer is "{correct_answer}". '
    'Is "{answer}" an equally correct response to this question? Answer yes or no.'
)

FAGGIOLI_B = direct_yes_no(
    "FagB",
    "Instruction: Indicate if the passage is relevant for the question. Respond with 'Yes' or 'No'.\n\n"
    "Question: {query_title}\n"
    "Passage: {context}\n"
    "Answer:",
)

HELM = direct_yes_no(
    "HELM",
    "Instruction: Does the passage answer the query? Respond with 'Yes' or 'No'.\n\n"
    "Query: {query_title}\n"
    "Passage: {context}\n"
    "Answer:",
)

SUN = direct_yes_no(
    "Sun",
    "Instruction: Given a passage and a query, predict whether the passage includes an answer to the "
    'query by producing either "Yes" or "No".\n'
    "Query: {query_title}\n"
    "Passage: {context}\n"
    "Answer:",
)

THOMAS = PromptTemplate(
    "Thomas",
    "Instruction: You are a search quality rater evaluating the relevance of passages. Given a query and "
    "a passage, you must provide a score on an integer scale of 0 to 2 with the following meanings:\n"
    "2 = highly relevant, very helpful for this query\n"
    "1 = relevant, may be partly helpful but might contain other irrelevant content\n"
    "0 = not relevant, should never be shown for this query\n\n"
    "Query: {query_title}\n"
    "Passage: {context}\n"
    "Answer:",
    "thomas",
    max_grade=2,
    needs_bank=False,
)

# --- TREC RAG track prompts. Not the method's: paraphrases of the track's tools, which fix only what
# is asked and the answer's shape (castorini/nuggetizer, prompts/prompt_templates/assigner_template.yaml
# and assigner_2grade_template.yaml; castorini/umbrela, prompts/qrel_zeroshot_bing.txt).

NUGGET_ASSIGNMENT = PromptTemplate(
    "TrecRagNuggetAssignment",
    "You label atomic facts (nuggets) by whether a passage captures them.\n"
    "For the search query and passage below, give each of the {count} nuggets one label: support when "
    "the passage captures the nugget fully, partial_support when it captures it in part, not_support when "
    "it does not capture it. Answer with the labels as a Python list of strings, one per nugget, in the "
    "order of the nuggets, and nothing else.\n\n"
    "Search Query: {query}\n"
    "Passage: {context}\n"
    "Nugget List: {nuggets}\n"
    "Labels:",
    "assignment",
    max_grade=2,
)

NUGGET_ASSIGNMENT_2 = PromptTemplate(
    "TrecRagNuggetAssignment2",
    "You label atomic facts (nuggets) by whether a passage captures them.\n"
    "For the search query and passage below, give each of the {count} nuggets one label: support when "
    "the passage captures the nugget fully, not_support otherwise. Answer with the labels as a Python "
    "list of strings, one per nugget, in the order of the nuggets, and nothing else.\n\n"
    "Search Query: {query}\n"
    "Passage: {context}\n"
    "Nugget List: {nuggets}\n"
    "Labels:",
    "assignment",
    max_grade=2,
)

UMBRELA = PromptTemplate(
    "Umbrela",
    "Score how relevant the passage is to the query on an integer scale from 0 to 3:\n"
    "0 = the passage has nothing to do with the query;\n"
    "1 = the passage is related to the query but does not answer it;\n"
    "2 = the passage holds some answer to the query, though it may be unclear or buried in other information;\n"
    "3 = the passage is devoted to the query and holds the exact answer.\n\n"
    "Query: {query_title}\n"
    "Passage: {context}\n\n"
    "Think of the intent behind the search, how well the passage meets a likely intent (M) and how "
    "trustworthy it is (T), and weigh them into a final integer score (O). Give no code and no reasoning; "
    "answer in the form ##final score: N",
    "umbrela",
    max_grade=3,
    needs_bank=False,
)

# The track's support judgement (full / partial / no support of an answer sentence by a document it
# cites; the labels of the TREC 2024 RAG track's support evaluation), in this project's own words.
SUPPORT = PromptTemplate(
    "TrecRagSupport",
    "Decide how well the document supports the statement taken from a generated answer.\n"
    "Full Support: everything the statement claims is stated in the document.\n"
    "Partial Support: some of what the statement claims is in the document, not all of it.\n"
    "No Support: the document does not back the statement.\n\n"
    "Statement: {question}\n"
    "Document: {context}\n\n"
    "Answer with one of Full Support, Partial Support or No Support, and nothing else.",
    "support",
    max_grade=2,
)

QUESTION_GENERATION = (
    "Break the query '{query_text}' into concise questions that must be answered. Generate 10 concise "
    "insightful questions that reveal whether information relevant for '{query_text}' was provided, "
    "showcasing a deep understanding of the subject matter. Avoid basic or introductory-level inquiries. "
    "Keep the questions short. {instruction}"
)
QUESTION_GENERATION_FACET = (
    "Explore the connection between '{query_title}' with a specific focus on the subtopic "
    "'{query_subtopic}'. Generate insightful questions that delve into advanced aspects of "
    "'{query_subtopic}', showcasing a deep understanding of the subject matter. Avoid basic or "
    "introductory-level inquiries. {instruction}"
)
NUGGET_GENERATION = (
    "Break the query '{query_text}' into concise nuggets that must be mentioned. Generate 10 concise "
    "insightful nuggets that reveal whether information relevant for '{query_text}' was provided, "
    "showcasing a deep understanding of the subject matter. Avoid basic or introductory-level nuggets. "
    "Keep nuggets to a maximum of 4 words. {instruction}"
)
NUGGET_GENERATION_FACET = (
    "Explore the connection between '{query_title}' with a specific focus on the subtopic "
    "'{query_subtopic}'. Generate insightful nuggets (key facts) that delve into advanced aspects of "
    "'{query_subtopic}', showcasing a deep understanding of the subject matter. Avoid basic or "
    "introductory-level nuggets. Keep nuggets to a maximum of 4 words. {instruction}"
)
QUESTION_INSTRUCTION = (
    "Give the question set in the following JSON format:\n"
    "```json\n"
    '{ "questions" : [question_text_1, question_text_2, ...] }\n'
    "```"
)
NUGGET_INSTRUCTION = (
    "Give the nugget set in the following JSON format:\n"
    "```json\n"
    '{ "nuggets" : [nugget_text_1, nugget_text_2, ...] }\n'
    "```"
)

GRADING_PROMPTS: dict[str, PromptTemplate] = {
    p.prompt_class: p
    for p in (
        QUESTION_SELF_RATING,
        NUGGET_SELF_RATING,
        ANSWER_EXTRACTION,
        NUGGET_EXTRACTION,
        FAGGIOLI_B,
        HELM,
        SUN,
        THOMAS,
    )
}
# kept apart from the method's prompts (whose texts also train the tests' tiny tokenizers)
TRACK_PROMPTS: dict[str, PromptTemplate] = {
    p.prompt_class: p for p in (NUGGET_ASSIGNMENT, NUGGET_ASSIGNMENT_2, UMBRELA, SUPPORT)
}
