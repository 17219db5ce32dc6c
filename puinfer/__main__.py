"""Demo: ``python -m puinfer`` runs the main analyses on the bundled data and prints them."""

from __future__ import annotations

import sys


def _section(title: str) -> None:
    print("\n" + "#" * 78 + f"\n# {title}\n" + "#" * 78)


def demo_pu() -> None:
    """SETM and DETM on the Mobile Phone PU split (seed 004, Section 5.2)."""
    _section("PU data: SETM and DETM on the Mobile Phone data (seed 004, Section 5.2)")
    print("(not yet available)")


DEMOS = [demo_pu]


def main(argv=None) -> int:
    import warnings

    warnings.simplefilter("default")
    for demo in DEMOS:
        demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
