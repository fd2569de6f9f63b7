"""A decode loop serving several requests at once, each with its own KV
cache grown by torch.cat one block of tokens at a time (fp16); on an OOM the
newest running request is preempted (its cache dropped) and redone from its
prompt later, as a serving engine does. A request alone that still runs out
of memory is dropped. The program changes course after an OOM. The cap is
gpumem's (--capacity): the program uses the default device."""
import time

import torch

start = time.time()
torch.manual_seed(0)
LAYERS, DIM, BLOCK, RUNNING = 8, 1024, 64, 6
proj = torch.nn.Linear(DIM, 2 * LAYERS * DIM, dtype=torch.float16, device="cuda")
# Each request: (id, tokens to decode); its cache holds 2*LAYERS*DIM halves a token.
waiting = [(i, 1024 + 512 * (i % 6)) for i in range(14)]
running = {}  # id -> [target tokens, cache]
limit = RUNNING  # requests admitted at once: lowered at each preemption, so the victim waits for a slot
ooms = preempted = dropped = finished = 0
with torch.no_grad():
    while waiting or running:
        while waiting and len(running) < limit:
            rid, target = waiting.pop(0)
            running[rid] = [target, torch.empty(0, 2 * LAYERS * DIM, dtype=torch.float16, device="cuda")]
        refused = None
        for rid in list(running):
            target, cache = running[rid]
            try:
                h = torch.randn(BLOCK, DIM, dtype=torch.float16, device="cuda")
                cache = torch.cat([cache, proj(h)])
                # Attend over the cache (its keys: the first DIM columns).
                (h @ cache[:, :DIM].T).softmax(-1).sum()
            except torch.cuda.OutOfMemoryError:
                refused = rid
                break
            finally:
                h = None
            running[rid][1] = cache
            cache = None
            if running[rid][1].shape[0] >= target:
                del running[rid]
                finished += 1
        if refused is None:
            continue
        ooms += 1
        cache = None
        victim = max(running)  # the newest request
        target = running.pop(victim)[0]
        if running:
            preempted += 1
            limit = len(running)
            waiting.insert(0, (victim, target))
        else:
            dropped += 1
        torch.cuda.empty_cache()
print("converge-result: caught_ooms=%d; kv_preempt: %d requests finished, %d preemptions, %d dropped, %.1f s" % (
    ooms, finished, preempted, dropped, time.time() - start))
