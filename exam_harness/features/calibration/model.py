"""The calibration section of the result document (docs/calibration.md, "In the outputs"): the design the
labels were drawn by, every judge's figures against them, the judges' agreement with each other and the
corrected scores. Gates read ``corrected`` (results/gate_checks.py) by its shape."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Interval(_Model):
    """A figure and its 95% interval (None: undefined, e.g. a TPR where no labelled pair answers)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None


class Figures(_Model):
    pairs: int  # labelled pairs the judge graded (in the split)
    base_rate: Interval
    tpr: Interval
    tnr: Interval
    precision: Interval
    kappa: Interval


class Split(_Model):
    """A judge's figures over the labelled pairs of one value of a field (``kind``, ``source``, ``stratum``)."""

    field: str
    value: str
    figures: Figures


class JudgeCalibration(_Model):
    judge: str
    min_grade: int
    first: bool = False  # the session's grader (whose grades the scores are)
    member: bool = False  # a member of the session's panel
    figures: Figures
    splits: list[Split] = Field(default_factory=list)


class Between(_Model):
    """Two judges' verdicts over every pair both graded (no sample: the share that agree and Cohen's kappa)."""

    a: str
    b: str
    pairs: int
    agreement: float | None
    kappa: float | None


class Stratum(_Model):
    name: str
    size: int
    labelled: int


class DesignInfo(_Model):
    """How the labels the figures use were drawn: a sample's id, unit and strata, or none (weight 1 each)."""

    sample: str | None
    unit: str
    labelled: int  # units
    population: int | None  # units the sample was drawn from (None: labels of no sample)
    strata: list[Stratum] = Field(default_factory=list)


class CorrectedRun(_Model):
    raw: float
    corrected: float | None
    low: float | None
    high: float | None


class CorrectedScores(_Model):
    """One measure of the document (``measure``: its name in ``measures[]``) corrected by the labels."""

    measure: str
    key: str
    title: str
    min_grade: int | None
    units: int
    runs: dict[str, CorrectedRun] = Field(default_factory=dict)
    missing: str | None = None  # why this measure has no corrected score

    def run(self, name: str) -> CorrectedRun | None:
        return self.runs.get(name)


class Calibration(_Model):
    labels: str  # the label file, as shown
    pairs: int  # pairs labelled in the file
    design: DesignInfo  # of the figures
    judges: list[JudgeCalibration] = Field(default_factory=list)
    between: list[Between] = Field(default_factory=list)
    scores_design: DesignInfo | None = None  # of the corrected scores (None: no sample corrects them)
    corrected: list[CorrectedScores] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def corrected_of(self, measure: str) -> CorrectedScores | None:
        """The corrected scores of the document's measure named ``measure`` (None: not corrected)."""
        return next((c for c in self.corrected if c.measure == measure), None)
