# Rank 0 of 2 waits for a rank 1 that never comes: the TCPStore rendezvous times out.
import datetime
import torch.distributed as dist
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29562", rank=0, world_size=2, timeout=datetime.timedelta(seconds=15))
