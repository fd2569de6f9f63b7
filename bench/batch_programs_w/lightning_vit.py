"""A Lightning ViT-S/16 (timm, random weights, no download) trained on
random 3x224x224 images, 100 classes, AdamW; one GPU, no logger, no
checkpoints. Two ways to run it:

    lightning_vit.py --bs N [--steps S] [--strategy ddp]
        trains S steps at batch N (a LightningModule under a Trainer;
        --strategy ddp: under DDP over NCCL, one process on one GPU);
        an OOM is not caught: exit status 1;
    lightning_vit.py --find [--mode binsearch] [--steps-per-trial 3] [--init-bs 2] [--max-trials 25]
        Lightning's own batch-size search (Tuner.scale_batch_size, the
        BatchSizeFinder) from --init-bs, which catches the OOMs of its
        trials; prints "lightning_found_batch=N lightning_trials=T" (the batch
        it settled on, and how many batch sizes it tried) and its time.

The images are made on the GPU in training_step from a batch of indices,
so the data loader moves almost nothing."""
import argparse
import tempfile
import time

import timm
import torch
import torch.nn.functional as F

try:
    import lightning.pytorch as pl
    from lightning.pytorch.tuner import Tuner
except ImportError:  # the older package name
    import pytorch_lightning as pl
    from pytorch_lightning.tuner import Tuner

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, default=2)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--find", action="store_true")
p.add_argument("--mode", default="binsearch", choices=("binsearch", "power"))
p.add_argument("--steps-per-trial", type=int, default=3)
p.add_argument("--init-bs", type=int, default=2)
p.add_argument("--max-trials", type=int, default=25)
p.add_argument("--strategy", default="auto")
a = p.parse_args()

class Indices(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return i

class LitViT(pl.LightningModule):
    def __init__(self, batch_size):
        super().__init__()
        self.batch_size = batch_size  # the attribute BatchSizeFinder scales
        self.trials, self.last_seen = 0, None
        self.model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=100)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(Indices(), batch_size=self.batch_size, shuffle=False, num_workers=0)

    def training_step(self, batch, batch_idx):
        n = batch.shape[0]
        if n != self.last_seen:  # a new trial of the finder (or the run itself)
            self.trials += 1
            self.last_seen = n
        x = torch.randn(n, 3, 224, 224, device=self.device)
        y = torch.randint(0, 100, (n,), device=self.device)
        return F.cross_entropy(self.model(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)

torch.manual_seed(0)
# default_root_dir: the finder's checkpoint of the initial weights goes to a
# scratch folder, not the current one (several finders run at once).
common = dict(default_root_dir=tempfile.mkdtemp(prefix="lightning_vit."), accelerator="gpu", devices=1, strategy=a.strategy, logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, num_sanity_val_steps=0)
if a.find:
    model = LitViT(a.init_bs)
    trainer = pl.Trainer(max_steps=1000, **common)
    t0 = time.time()
    found = Tuner(trainer).scale_batch_size(model, mode=a.mode, steps_per_trial=a.steps_per_trial, init_val=a.init_bs,
                                             max_trials=a.max_trials)
    print("lightning_found_batch=%s lightning_trials=%d mode=%s steps_per_trial=%d search_s=%.2f" % (
        found, model.trials, a.mode, a.steps_per_trial, time.time() - t0))
else:
    model = LitViT(a.bs)
    trainer = pl.Trainer(max_steps=a.steps, **common)
    trainer.fit(model)
    torch.cuda.synchronize()
    print("lightning_vit: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
