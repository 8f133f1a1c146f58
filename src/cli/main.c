#include <stdio.h>
#include <string.h>

#include "fsdp/cli.h"
#include "fsdp/memviz.h"

static void print_usage(FILE *out) {
  fputs("usage: fsdp COMMAND [options]\n"
        "\n"
        "commands:\n"
        "  train    train GPT-2 or Llama 3 with fully sharded data parallelism (launch with mpirun -np N)\n"
        "  plan     print the memory per rank and the traffic of a training configuration, allocating nothing\n"
        "  eval     the mean loss of a model over fixed windows of a token file (or of text, with --tokenizer)\n"
        "  export   write a model as Hugging Face safetensors and config.json\n"
        "  sample   generate tokens from a prompt with a KV cache (one rank)\n"
        "  tokenize encode text or JSONL files into a token file, or llm.c shards, with a Hugging Face tokenizer.json\n"
        "  memviz   draw a memory snapshot of train as an HTML page or SVG image\n"
        "  traceviz draw a step of a trace of train as an SVG timeline of compute and communication\n"
        "\n"
        "'fsdp COMMAND --help' lists a command's options.\n",
        out);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "train") == 0) return fsdp_train_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "plan") == 0) return fsdp_plan_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "eval") == 0) return fsdp_eval_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "export") == 0) return fsdp_export_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "sample") == 0) return fsdp_sample_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "tokenize") == 0) return fsdp_tokenize_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "memviz") == 0) return fsdp_memviz_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "traceviz") == 0) return fsdp_traceviz_main(argc - 1, argv + 1);
  fprintf(stderr, "fsdp: error: unknown command '%s'\n", argv[1]);
  print_usage(stderr);
  return 2;
}
