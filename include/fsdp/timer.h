#ifndef FSDP_TIMER_H
#define FSDP_TIMER_H

/* Monotonic wall clock in milliseconds. */
double time_now_ms(void);

#endif
