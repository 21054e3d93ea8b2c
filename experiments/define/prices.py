"""The price table: estimated USD per model call from token counts, and the pre-run estimate."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from treadwise.datafiles import read_yaml_mapping

DEFAULT_PRICES = Path(__file__).resolve().parent.parent / "prices.yaml"
PER_TOKENS = 1_000_000


class PriceError(ValueError):
    """The price file cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Prices:
    """USD per 1M input and output tokens by model spec; models not listed cost "unknown"."""

    per_million: dict[str, tuple[float, float]] = field(default_factory=dict)
    input_tokens_per_call: int = 2300
    output_tokens_per_call: int = 120

    def known(self, spec: str) -> bool:
        return spec in self.per_million

    def cost(self, spec: str, input_tokens: float, output_tokens: float) -> float | None:
        """Estimated USD for these tokens, or None when the model has no price."""
        if spec not in self.per_million:
            return None
        price_in, price_out = self.per_million[spec]
        return (input_tokens * price_in + output_tokens * price_out) / PER_TOKENS

    def estimate(self, spec: str, calls: int) -> float | None:
        """Estimated USD for this many typical model calls."""
        return self.cost(spec, calls * self.input_tokens_per_call,
                         calls * self.output_tokens_per_call)


def load_prices(path: Path | None = None) -> Prices:
    """Read a price file (the packaged one by default); PriceError names what is wrong."""
    path = Path(path or DEFAULT_PRICES)
    data = read_yaml_mapping(path, PriceError, "price file")
    table: dict[str, tuple[float, float]] = {}
    for spec, row in (data.get("models") or {}).items():
        try:
            table[str(spec)] = (float(row["input"]), float(row["output"]))
        except (TypeError, KeyError, ValueError):
            raise PriceError(f"{path}: models.{spec}: needs numeric input and output prices "
                             "(USD per 1M tokens)") from None
    estimate = data.get("estimate") or {}
    return Prices(table, int(estimate.get("input_tokens_per_call", 2300)),
                  int(estimate.get("output_tokens_per_call", 120)))
