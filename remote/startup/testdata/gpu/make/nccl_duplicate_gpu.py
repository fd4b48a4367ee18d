# Two NCCL ranks on one GPU: ncclInvalidUsage ("Duplicate GPU detected").
import os, datetime
import torch, torch.distributed as dist, torch.multiprocessing as mp

def rank_main(rank):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", "29561"
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60))
    t = torch.ones(4, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()

if __name__ == "__main__":
    mp.spawn(rank_main, nprocs=2)
