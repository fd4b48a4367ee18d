# A launch wrapper that starts a worker at import time, with no main guard,
# under the spawn start method: the child re-imports it and fails.
import multiprocessing as mp
import torch

def worker():
    torch.cuda.init()

mp.set_start_method("spawn", force=True)
p = mp.Process(target=worker)
p.start()
p.join()
