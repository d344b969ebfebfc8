/* Subcommands of the specdec CLI. Each takes argv with argv[0] = the command
 * name and returns the process exit code (0 ok, 1 runtime error, 2 usage). */
#ifndef SD_CLI_COMMANDS_H
#define SD_CLI_COMMANDS_H

#define SD_WEAK __attribute__((weak))
SD_WEAK int cmd_generate(int argc, char **argv);
SD_WEAK int cmd_bench(int argc, char **argv);
SD_WEAK int cmd_inspect(int argc, char **argv);
SD_WEAK int cmd_tokenize(int argc, char **argv);
SD_WEAK int cmd_quantize(int argc, char **argv);
SD_WEAK int cmd_chat(int argc, char **argv);
/* src/server/: the HTTP server, on the public API. */
SD_WEAK int cmd_serve(int argc, char **argv);

#endif
