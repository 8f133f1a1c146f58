"""What the PyTorch oracles of fsdp.c's models (gpt2_torch.py, llama_torch.py) share."""
import torch


class FsdpModule(torch.nn.Module):
    def compute_in(self, contract):
        """Computes under contract (dtype_contract.py) from now on: every module that
        rounds by one holds it as its `contract`."""
        for m in self.modules():
            if hasattr(m, "contract"):
                m.contract = contract

    def optimizer(self, lr, betas, eps, weight_decay, params=None):
        """AdamW decaying matrices only, as fsdp.c does; params: other tensors in
        the order of self.parameters() (fp32 master copies) to optimize instead."""
        params = list(self.parameters()) if params is None else params
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)
