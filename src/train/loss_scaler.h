/* Private to src/train: torch.cuda.amp.GradScaler's dynamic loss scaling, for fp16
 * parameters (loss_scaler.c). */
#ifndef FSDP_TRAIN_LOSS_SCALER_H
#define FSDP_TRAIN_LOSS_SCALER_H

struct loss_scaler {
  float scale;     /* 0: off */
  int good_steps;  /* in a row without overflow */
};

/* GradScaler's update after a step whose scaled gradients have the norm grad_norm (the
 * same on every rank): an overflow (inf or nan) skips the step and halves the scale;
 * every 2000 good steps in a row double it. Returns 1 when the step is to be skipped. */
int loss_scaler_update(struct loss_scaler *s, double grad_norm, int step);

#endif
