/* `fsdp export`: a model's parameters as Hugging Face safetensors and config.json. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/hf.h"
#include "fsdp/log.h"
#include "fsdp/train.h"

/* The folder, made if missing (its parent must exist). */
static void make_output_folder(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) fsdp_fatal("--output: '%s' exists and is not a folder", dir);
  } else if (mkdir(dir, 0755) != 0) {
    fsdp_fatal("--output: cannot make the folder '%s': %s", dir, strerror(errno));
  }
}

int fsdp_export_main(int argc, char **argv) {
  cli_start_ranks(&argc, &argv);
  struct command_options o;
  if (command_options_parse(COMMAND_EXPORT, &o, argc, argv)) {
    comm_finalize();
    return 0;
  }
  struct comm_group *world = comm_world();
  int rank = comm_rank(world);
  if (rank == 0) make_output_folder(o.output);

  /* No batch runs: the smallest one the model can be declared for. */
  struct source_model m;
  source_model_open(&m, &o.run.model, o.run.seed, world, 1, 1, NULL);
  if (m.source) fsdp_log_info("parameters: from %s", m.source);
  hf_export(&m.fsdp, m.family, &o.run.model.config, o.output, o.export_dtype, o.max_file_bytes, rank == 0);
  fsdp_log_info("exported %zu parameters (%s) to %s", fsdp_model_numel(&m.fsdp), dtype_name(o.export_dtype),
                o.output);
  source_model_close(&m);
  comm_finalize();
  return 0;
}
