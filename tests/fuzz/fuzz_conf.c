/* libFuzzer target: arbitrary bytes as a config file. Nothing may crash, leak or hang, and a rejected
 * file must have produced at least one FILE:LINE message.
 * fuzz-sources: conf/conf.c translate/ip.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

static void count(void *arg, const char *msg)
{
	(*(unsigned *)arg)++;
	if (strncmp(msg, "fuzz.conf:", 10))
		abort(); /* every message names the file and a line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned errors = 0;
	struct conf *c = conf_load_mem("fuzz.conf", (const char *)data, size, count, &errors);

	if (c) {
		if (errors)
			abort(); /* accepted files report nothing */
		conf_free(c);
	} else if (errors == 0 && size > 0) {
		abort(); /* rejected without a reason */
	}
	return 0;
}
