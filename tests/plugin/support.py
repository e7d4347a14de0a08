"""What tests elsewhere share with the OpenAI plugin's tests: a bank, its collection and runs
graded by the fake OpenAI server (which answers the digit after GRADE=), and the options that point the plugin
at that server."""

from __future__ import annotations

from tests.fake_openai_server import FakeOpenAIServer

BANK = """\
queries:
  - id: q1
    text: first query
    questions:
      - {id: q1/a, text: question a}
      - {id: q1/b, text: question b}
  - id: q2
    text: second query
    questions:
      - {id: q2/c, text: question c}
"""

# The fake server answers the digit after GRADE= in the prompt (the passage carries it).
COLLECTION = """\
id\ttext
p1\tGRADE=5 a passage that answers everything
p2\tGRADE=2 a weak passage
p3\tGRADE=4 a good passage for the second query
p4\tGRADE=0 an unrelated passage
"""

RUNS = {
    "good.run": "q1 Q0 p1 1 2.0 good\nq2 Q0 p3 1 1.0 good\n",
    "weak.run": "q1 Q0 p2 1 2.0 weak\nq2 Q0 p4 1 1.0 weak\n",
}


def openai_args(server: FakeOpenAIServer, *extra: str) -> list[str]:
    options = [
        f"base_url={server.base_url}",
        "model=fake-model",
        "api_key=test",
        "timeout=0.5",
        "backoff_base=0.001",
        "backoff_max=0.002",
        *extra,
    ]
    args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai"]
    for option in options:
        args += ["--exam-grader-option", option]
    return args
