"""``evaluate --support``: the citations of the cited answers graded by the session's grader with its ``support``
prompt, through the grade cache (a second pass, after the exam's)."""

from __future__ import annotations

from exam_harness.api import ConfigError, ExamOptions, ExtraGrading, Graded

# what evaluate's note says of a pair left without a grade (it counts as no support)
UNMET = "(sentence, cited document) pairs have no support grade and count as no support"


def grade_support(options: ExamOptions, graded: Graded) -> ExtraGrading:
    """``--support``: every (answer sentence, cited document) pair graded by the session's grader with its
    ``support`` prompt, through the cache; the support credits of each answer sentence."""
    from exam_harness.features.citation_support.credits import support_credits, support_pairs
    from exam_harness.graders.base import GraderConfig
    from exam_harness.grading.cache import GradeCache
    from exam_harness.grading.passes import chunk_size_for, run_grading_pass

    answers = graded.inputs.answers
    if not answers:
        raise ConfigError("--support needs cited answers among the runs (TREC RAG answer files)")
    if options.grader == "recorded":
        raise ConfigError("--support needs --grader hf or openai: their support prompt grades the citations")
    pairs = support_pairs(answers, graded.inputs.data.passages)
    grader = graded.registries.graders.create(
        options.grader, GraderConfig(model=options.model, options={**options.grader_options, "prompt": "support"},
                                     data=graded.inputs.data, batch_size=options.batch_size, device=options.device))
    cache = GradeCache(options.cache, keep_text=options.cache_text == "keep")
    try:
        # grade_missing: the citations were never part of a sharded pass (--exam-shard grades the pool alone)
        outcome = run_grading_pass(grader, pairs.requests, cache, chunk_size=chunk_size_for(grader, options.batch_size),
                                   grade_missing=True)
    finally:
        grader.close()
        cache.close()
    return ExtraGrading(outcome, support=support_credits(pairs, outcome.grades), unmet=UNMET)

