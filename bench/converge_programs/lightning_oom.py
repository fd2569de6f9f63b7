"""A Lightning training loop (manual optimization) whose training_step
catches an OOM and skips that step; the steps' sequence lengths vary. The
program changes course after an OOM: AdamW's state appears at the first
step that succeeds. The cap is gpumem's (--capacity): Lightning is given one
GPU, the default device."""
import time

import torch
import torch.nn as nn

try:
    import lightning as L
except ImportError:
    import pytorch_lightning as L

start = time.time()
SEQS = (256, 512, 1024, 2048, 768, 3072, 1536, 512)


class Skipping(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layers = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 4)
        self.skipped, self.done = [], []

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters())

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        seq = SEQS[batch_idx % len(SEQS)]
        refused = False
        try:
            x = torch.randn(16, seq, 512, device=self.device)
            loss = self.layers(x).square().mean()
            self.manual_backward(loss)
            opt.step()
        except torch.cuda.OutOfMemoryError:
            refused = True
        x = loss = None
        opt.zero_grad(set_to_none=True)
        if refused:
            self.skipped.append(seq)
            torch.cuda.empty_cache()
        else:
            self.done.append(seq)
        return None


torch.manual_seed(0)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(len(SEQS))), batch_size=1)
module = Skipping()
trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
trainer.fit(module, data)
print("converge-result: caught_ooms=%d; lightning_oom: sequences trained %s, skipped %s, %.1f s" % (
    len(module.skipped), module.done, module.skipped, time.time() - start))
