/* `fsdp eval`: the mean cross-entropy of a model over fixed windows of --data's shards
 * (src/train/evaluation.c runs it), as one JSON line. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/train.h"

int fsdp_eval_main(int argc, char **argv) {
  cli_start_ranks(&argc, &argv);
  struct command_options o;
  if (command_options_parse(COMMAND_EVAL, &o, argc, argv)) {
    comm_finalize();
    return 0;
  }
  struct evaluation e = evaluate(&o.run, o.batches);
  if (comm_rank(comm_world()) == 0) {
    /* JSON has no NaN or infinity: such a loss is null, as in train's --log, and said. */
    char loss[32] = "null";
    if (isfinite(e.loss))
      snprintf(loss, sizeof loss, "%.9g", e.loss);
    else
      fprintf(stderr, "eval: warning: the loss is %s: the model's weights or its config make no finite loss\n",
              isnan(e.loss) ? "NaN" : "infinite");
    printf("{\"loss\": %s, \"windows\": %zu, \"tokens\": %zu}\n", loss, e.windows, e.windows * (size_t)o.run.seq_len);
    fflush(stdout);
  }
  comm_finalize();
  return 0;
}
