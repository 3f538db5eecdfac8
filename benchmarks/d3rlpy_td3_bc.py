"""d3rlpy's TD3+BC on a dataset saved by ``benchmarks/offline.py``: seconds per block of updates, as JSON.

Run by ``offline.py --d3rlpy-python PYTHON`` in a separate environment where d3rlpy is installed (it is never a
dependency of the project)::

    python -m venv /tmp/peers/d3 && /tmp/peers/d3/bin/pip install torch==2.13.0 "d3rlpy>=2.8,<2.9"

Uses d3rlpy's own ``fitter`` with one epoch per block, so a block's time is what a d3rlpy user's training
loop spends on that many updates (batch sampling included), logging switched off. The first block warms up and
is reported apart.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the .npz offline.py wrote")
    parser.add_argument("--updates", type=int, default=200, help="updates per block")
    parser.add_argument("--blocks", type=int, default=3, help="blocks timed after the warm-up one")
    args = parser.parse_args()

    import d3rlpy
    import torch

    rows = np.load(args.data)
    dataset = d3rlpy.dataset.MDPDataset(rows["observations"], rows["actions"], rows["rewards"],
                                        rows["terminals"], timeouts=rows["timeouts"])
    # its defaults are the paper's, as rlengine's td3_bc: [256, 256] networks, alpha 2.5, the actor every 2nd
    # update; observations standardised over the dataset (rlengine's normalize_observations), actions to [-1, 1]
    config = d3rlpy.algos.TD3PlusBCConfig(batch_size=256,
                                          observation_scaler=d3rlpy.preprocessing.StandardObservationScaler(),
                                          action_scaler=d3rlpy.preprocessing.MinMaxActionScaler())
    algo = config.create(device="cpu:0")
    seconds = []
    start = time.perf_counter()
    for _epoch, _metrics in algo.fitter(dataset, n_steps=args.updates * (args.blocks + 1),
                                        n_steps_per_epoch=args.updates, show_progress=False,
                                        logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
                                        save_interval=args.blocks + 2):
        now = time.perf_counter()
        seconds.append(now - start)
        start = now
    print(json.dumps({"d3rlpy": d3rlpy.__version__, "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads(), "warm_up_s": seconds[0], "block_s": seconds[1:]}))


if __name__ == "__main__":
    main()
