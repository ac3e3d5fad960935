"""Gradient-descent training of the attention network with trainable Q/K (the paper's Appendix H.1).

The network is the one of :func:`paththeory.model.network_output` (the paper's Eqs. 1-4: explicit
``1/sqrt(width)`` factors, no residual, LayerNorm or MLP, every layer's attention from the bare
input, mean-pooling readout). All of it is trained with AdamW on the MSE against ``y = +-1``
(decision by sign): the input projection ``V0 [n, N0]``, the value weights ``V[l] [H, n, n]``, the
readout ``a [n]`` and the query/key weights ``Q[l], K[l] [H, G, N0]``. The model kept is the one
with the best accuracy on sequences of held-out *validation* characters.

The shipped network (``paththeory/checkpoints/omniglot_l2h4``) was trained with this module on
one H100 GPU (with a recipe that differs from the paper's in the ways listed in its ``.json``,
``differences_from_paper``: AdamW, warm-up, gradient clipping, fp32, explicit ``1/sqrt(n)``
factors): ``paththeory train omniglot --steps 41000
--batch-size 128 --d-model 512 --qk-dim 128 --channels 3 --lr 3e-4 --warmup 200 --seed 1``
(about 8 minutes; its ``.json`` holds the command line, the validation history and the
accuracies). Of the two H = 4 networks trained so (seeds 0 and 1; seed 0 ships too, in float16), it is the one with the better *validation* accuracy (0.854 against 0.834); on 1,000 balanced
sequences each it reaches 0.838 on held-out characters (the paper: 83.8 %), 0.798 on the one-shot
runs of the evaluation alphabets and 0.711 on MNIST 0 vs 1. The :class:`TrainConfig` defaults are
its settings, except the seed.

On a CPU the same training is out of reach (12-17 hours, estimated by scaling), and a smaller network
(``d_model`` 64, ``--channels 1``, batch 64, lr 5e-3, 20,000 steps, 31 min on 2 cores) stalled on
the loss plateau at MSE ~1, reaching only 56.9 % on held-out characters: with random Q/K the
attention carries no information on which context image matches the query (the correlation
between the label mass reaching the query tokens and ``y`` is ``|r| < 0.05`` at initialisation),
so the value and readout weights shrink first and the Q/K gradients then vanish too, a saddle that
only batch noise leaves. Options kept from those trials: ``--qk-scale`` (Q/K initial std times
``sqrt(N0)``), ``--qk-init shared`` (``K = Q``), warm-up, global-norm clipping, ``--channels 1``
(``N0 = 64``) and ``--augment dihedral`` (8 rotations/reflections of each training character as
new classes, 158 -> 1,264).

Data: the 242 background characters available offline (``load_omniglot("auto")`` uses the full
964-character background set where it can be found); characters are split into train /
validation / held-out test (:func:`paththeory.tasks.omniglot.split_characters`), and the training
characters can be augmented by rotations (and reflections) of every drawing, each a new class.

Checkpoints are an ``.npz`` of float32 arrays (``Q``, ``K`` ``[L, H, G, N0]``, ``V0``, ``V1..VL``,
``a``) and a ``.json`` of metadata (config, command line, data, steps, wall time, accuracies): no
pickles. :func:`save_checkpoint` writes both atomically and records the npz's SHA-256 in the json,
so a pair mixed by an interrupted save is refused on load. :func:`load_checkpoint` reads the shipped
one by default; checkpoints of your own (``$PATHTHEORY_CHECKPOINTS``, the user cache) are looked up
first. The command line ``paththeory train omniglot`` is :func:`paththeory.cli.train_command`.
"""


from __future__ import annotations

from paththeory.training.trainable import (
    AUGMENTATIONS,
    Params,
    TrainConfig,
    architecture,
    init_params,
    loss_fn,
    optimizer,
    predict,
    value_params,
)
from paththeory.training.batches import (
    EVAL_SETS,
    OmniglotData,
    default_mnist_context,
    evaluation_sets,
    omniglot_batches,
    omniglot_data,
)
from paththeory.training.checkpoints import (
    CHECKPOINTS_ENV_VAR,
    Checkpoint,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    DIGEST_KEY,
    SHIPPED,
    SHIPPED_NETWORKS,
    checkpoint_files,
    checkpoint_folders,
    checkpoint_sequences,
    load_checkpoint,
    locate_checkpoint,
    save_checkpoint,
)
from paththeory.training.evaluation import (
    evaluate,
    gd_order_parameter,
)
from paththeory.training.descent import (
    TrainResult,
    train,
    training_demo,
)

__all__ = [
    "AUGMENTATIONS",
    "CHECKPOINTS_ENV_VAR",
    "Checkpoint",
    "CheckpointNotFoundError",
    "CorruptCheckpointError",
    "DIGEST_KEY",
    "EVAL_SETS",
    "OmniglotData",
    "Params",
    "SHIPPED",
    "SHIPPED_NETWORKS",
    "TrainConfig",
    "TrainResult",
    "architecture",
    "checkpoint_files",
    "checkpoint_folders",
    "checkpoint_sequences",
    "default_mnist_context",
    "evaluate",
    "evaluation_sets",
    "gd_order_parameter",
    "init_params",
    "load_checkpoint",
    "locate_checkpoint",
    "loss_fn",
    "omniglot_batches",
    "omniglot_data",
    "optimizer",
    "predict",
    "save_checkpoint",
    "train",
    "training_demo",
    "value_params",
]
