/* Unit tests of eth_side/buf.c, the chunked byte queues of TCP connections: a randomized run against
 * a flat copy of the same bytes (writes ahead of the contiguous data as out-of-order segments make,
 * appends, reads and peeks from anywhere, consumes, trims of what lies beyond the contiguous data)
 * over a queue of hundreds of chunks, so that lookups take the skip links, which each append, consume
 * and trim keeps; and a peer's segments alternating between both ends of a 16 MB window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eth_side/buf.h"

#define CAP (4u << 20) /* 516 chunks */

static struct eth_chunk_pool pool;
/* the model: the queue's bytes from byte 0 at model[base]; which bytes beyond len were written */
static uint8_t model[3 * CAP], written[3 * CAP], out[CAP];

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)random() % n : 0;
}

/* Every chunk's skip link leads ETH_CHUNK_SKIP chunks on, as far as the links are kept. */
static void check_links(const struct eth_bufq *q)
{
	uint32_t i = 0;
	struct eth_chunk *c = q->head, *far = q->head;

	for (uint32_t k = 0; far && k < ETH_CHUNK_SKIP; k++)
		far = far->next;
	for (; c && far; c = c->next, far = far->next, i++)
		assert_ptr_equal(c->skip, far);
	if (q->n_chunks >= ETH_CHUNK_SKIP)
		assert_int_equal(i, q->n_chunks - ETH_CHUNK_SKIP);
}

static void test_random_ops(void **state)
{
	struct eth_bufq q;
	uint32_t base = 0; /* model offset of byte 0 */
	uint8_t buf[20000];

	(void)state;
	srandom(7);
	assert_int_equal(eth_chunk_pool_init(&pool, (CAP / ETH_CHUNK_DATA + 4) * ETH_CHUNK_SIZE), 0);
	eth_bufq_init(&q, CAP);
	memset(written, 0, sizeof(written));
	for (unsigned step = 0; step < 20000; step++) {
		uint32_t op = rnd(100), len = q.len, off, n;

		if (op < 35) { /* append */
			n = rnd(sizeof(buf)) + 1;
			for (uint32_t i = 0; i < n; i++)
				buf[i] = (uint8_t)random();
			n = eth_bufq_append(&pool, &q, buf, n);
			memcpy(model + base + len, buf, n);
			memset(written + base + len, 0, n);
			assert_int_equal(q.len, len + n);
		} else if (op < 55) { /* write ahead of the contiguous data, anywhere in the window */
			off = len + rnd(CAP - len);
			n = rnd(sizeof(buf)) + 1;
			if (n > CAP - off)
				n = CAP - off;
			for (uint32_t i = 0; i < n; i++)
				buf[i] = (uint8_t)random();
			assert_int_equal(eth_bufq_write_at(&pool, &q, off, buf, n), 0);
			memcpy(model + base + off, buf, n);
			memset(written + base + off, 1, n);
		} else if (op < 75 && len) { /* read from anywhere in the contiguous data */
			off = rnd(len);
			n = rnd(len - off) + 1;
			eth_bufq_read(&q, off, out, n);
			assert_memory_equal(out, model + base + off, n);
		} else if (op < 85 && len) {
			const uint8_t *d;

			off = rnd(len);
			n = eth_bufq_peek(&q, off, &d);
			assert_true(n >= 1 && n <= len - off);
			assert_memory_equal(d, model + base + off, n);
		} else if (op < 97) { /* consume; the model slides back once base passes CAP */
			n = rnd(len + 1);
			eth_bufq_consume(&pool, &q, n);
			base += n;
			if (base >= CAP) {
				memmove(model, model + base, CAP);
				memmove(written, written + base, CAP);
				memset(written + CAP, 0, 2 * CAP);
				base = 0;
			}
		} else { /* renege what lies beyond the contiguous data */
			eth_bufq_trim(&pool, &q);
			memset(written + base + q.len, 0, CAP - q.len);
		}
		/* bytes written ahead read back once the gap before them is filled: check some now */
		check_links(&q);
		if (step % 500 == 0 && q.n_chunks) {
			uint32_t covered = q.n_chunks * ETH_CHUNK_DATA - q.head_off;

			for (uint32_t k = 0; k < 50; k++) {
				uint32_t o = q.len + rnd(covered - q.len);

				if (o >= covered || !written[base + o])
					continue;
				/* (raw peek past len: make it contiguous for a moment) */
				uint32_t save = q.len;
				const uint8_t *d;

				q.len = o + 1;
				assert_int_equal(eth_bufq_peek(&q, o, &d) >= 1, 1);
				assert_int_equal(*d, model[base + o]);
				q.len = save;
			}
		}
	}
	eth_bufq_free(&pool, &q);
	assert_int_equal(pool.n_used, 0);
	eth_chunk_pool_fini(&pool);
}

/* A receiver's pattern under attack: one byte at each end of a 16 MB window, over and over, and the
 * bytes read back from both ends (the walk between them takes the skip links). */
static void test_alternating_ends(void **state)
{
	const uint32_t cap = 16u << 20;
	struct eth_bufq q;
	uint8_t b;

	(void)state;
	assert_int_equal(eth_chunk_pool_init(&pool, (cap / ETH_CHUNK_DATA + 4) * ETH_CHUNK_SIZE), 0);
	eth_bufq_init(&q, cap);
	for (uint32_t i = 0; i < 20000; i++) {
		uint32_t off = i & 1 ? cap - 1 - (i % 977) : 1 + (i % 977);

		b = (uint8_t)i;
		assert_int_equal(eth_bufq_write_at(&pool, &q, off, &b, 1), 0);
	}
	check_links(&q);
	b = 0xee;
	assert_int_equal(eth_bufq_write_at(&pool, &q, 0, &b, 1), 0);
	q.len = cap; /* (as if the gap were filled: read both ends) */
	eth_bufq_read(&q, cap - 1 - (19999 % 977), &b, 1);
	assert_int_equal(b, (uint8_t)19999);
	eth_bufq_read(&q, 1 + (19998 % 977), &b, 1);
	assert_int_equal(b, (uint8_t)19998);
	eth_bufq_read(&q, 0, &b, 1);
	assert_int_equal(b, 0xee);
	eth_bufq_consume(&pool, &q, cap - 100 * ETH_CHUNK_DATA);
	check_links(&q);
	eth_bufq_free(&pool, &q);
	assert_int_equal(pool.n_used, 0);
	eth_chunk_pool_fini(&pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_ops),
	    cmocka_unit_test(test_alternating_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
