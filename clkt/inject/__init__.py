"""Knowledge injection (the GPU queue): strategies, the training loop, the job process and its consumer.

Importing this package does not import torch; the job process does (`python -m clkt.inject.run_job`).
"""

from __future__ import annotations

__all__: list[str] = []
