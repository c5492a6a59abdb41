/* Chunked byte queues (design in buf.h).
 *
 * Offsets inside a queue are "raw" while walking: raw = head_off + off, chunk k covering raw
 * [k * DATA, (k + 1) * DATA). The cursor remembers the last chunk found, so a sender reading its
 * queue front to back, or a receiver appending, walks each chunk once. Skip links (every chunk's to
 * the one ETH_CHUNK_SKIP on) bound any other lookup, such as a peer's out-of-order segments
 * alternating between both ends of a big window, to n / ETH_CHUNK_SKIP + ETH_CHUNK_SKIP steps. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "buf.h"

int eth_chunk_pool_init(struct eth_chunk_pool *p, size_t bytes)
{
	memset(p, 0, sizeof(*p));
	bytes = (bytes + ETH_CHUNK_SIZE - 1) / ETH_CHUNK_SIZE * ETH_CHUNK_SIZE;
	if (bytes == 0 || bytes / ETH_CHUNK_SIZE > UINT32_MAX)
		return -EINVAL;
	p->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p->base == MAP_FAILED) {
		p->base = NULL;
		return -errno;
	}
	p->bytes = bytes;
	p->n_max = (uint32_t)(bytes / ETH_CHUNK_SIZE);
	return 0;
}

void eth_chunk_pool_fini(struct eth_chunk_pool *p)
{
	if (p->base)
		munmap(p->base, p->bytes);
	memset(p, 0, sizeof(*p));
}

static struct eth_chunk *chunk_get(struct eth_chunk_pool *p)
{
	struct eth_chunk *c = p->free;

	if (c)
		p->free = c->next;
	else if (p->n_carved < p->n_max)
		c = (struct eth_chunk *)(p->base + (size_t)p->n_carved++ * ETH_CHUNK_SIZE);
	else
		return NULL;
	c->next = NULL;
	p->n_used++;
	return c;
}

static void chunk_put(struct eth_chunk_pool *p, struct eth_chunk *c)
{
	c->next = p->free;
	p->free = c;
	p->n_used--;
}

void eth_bufq_init(struct eth_bufq *q, uint32_t cap)
{
	memset(q, 0, sizeof(*q));
	q->cap = cap;
}

/* The chunk holding raw offset RAW (which the chunks cover). */
static struct eth_chunk *find(struct eth_bufq *q, uint32_t raw)
{
	uint32_t k = raw / ETH_CHUNK_DATA, i = 0;
	struct eth_chunk *c = q->head;

	if (q->cur && q->cur_idx <= k) {
		c = q->cur;
		i = q->cur_idx;
	}
	/* (chunk i has its skip link: i + SKIP <= k < n_chunks) */
	for (; k - i >= ETH_CHUNK_SKIP; i += ETH_CHUNK_SKIP)
		c = c->skip;
	for (; i < k; i++)
		c = c->next;
	q->cur = c;
	q->cur_idx = k;
	return c;
}

int eth_bufq_write_at(struct eth_chunk_pool *p, struct eth_bufq *q, uint32_t off, const void *data, uint32_t n)
{
	const uint8_t *src = data;
	uint32_t raw = q->head_off + off, need;
	struct eth_chunk *c;

	if (n == 0)
		return 0;
	if (off > q->cap || n > q->cap - off)
		return -ENOBUFS;
	need = (raw + n + ETH_CHUNK_DATA - 1) / ETH_CHUNK_DATA;
	if (need > q->n_chunks && need - q->n_chunks > p->n_max - p->n_used)
		return -ENOMEM; /* all or nothing: never leave half a segment behind */
	while (q->n_chunks < need) {
		c = chunk_get(p);
		if (!c)
			return -ENOMEM; /* cannot happen after the check above */
		if (q->tail)
			q->tail->next = c;
		else
			q->head = c;
		q->tail = c;
		if (q->skip_src) {
			q->skip_src->skip = c;
			q->skip_src = q->skip_src->next;
		} else if (q->n_chunks + 1 == ETH_CHUNK_SKIP) {
			q->skip_src = q->head;
		}
		q->n_chunks++;
	}
	c = find(q, raw);
	while (n) {
		uint32_t in = raw % ETH_CHUNK_DATA, k = ETH_CHUNK_DATA - in;

		if (k > n)
			k = n;
		memcpy(c->data + in, src, k);
		src += k;
		raw += k;
		n -= k;
		if (n) {
			c = c->next;
			q->cur = c;
			q->cur_idx++;
		}
	}
	return 0;
}

uint32_t eth_bufq_append(struct eth_chunk_pool *p, struct eth_bufq *q, const void *data, uint32_t n)
{
	const uint8_t *src = data;
	uint32_t done = 0;

	if (n > eth_bufq_space(q))
		n = eth_bufq_space(q);
	/* chunk by chunk, so a dry pool still takes what fits in the chunks already held */
	while (done < n) {
		uint32_t raw = q->head_off + q->len, k = ETH_CHUNK_DATA - raw % ETH_CHUNK_DATA;

		if (k > n - done)
			k = n - done;
		if (eth_bufq_write_at(p, q, q->len, src + done, k))
			break;
		q->len += k;
		done += k;
	}
	return done;
}

uint32_t eth_bufq_peek(struct eth_bufq *q, uint32_t off, const uint8_t **data)
{
	uint32_t raw = q->head_off + off, in, k;
	struct eth_chunk *c;

	if (off >= q->len)
		return 0;
	c = find(q, raw);
	in = raw % ETH_CHUNK_DATA;
	k = ETH_CHUNK_DATA - in;
	if (k > q->len - off)
		k = q->len - off;
	*data = c->data + in;
	return k;
}

void eth_bufq_read(struct eth_bufq *q, uint32_t off, void *dst, uint32_t n)
{
	uint8_t *out = dst;
	uint32_t raw = q->head_off + off;
	struct eth_chunk *c;

	if (n == 0)
		return;
	c = find(q, raw);
	while (n) {
		uint32_t in = raw % ETH_CHUNK_DATA, k = ETH_CHUNK_DATA - in;

		if (k > n)
			k = n;
		memcpy(out, c->data + in, k);
		out += k;
		raw += k;
		n -= k;
		if (n) {
			c = c->next;
			q->cur = c;
			q->cur_idx++;
		}
	}
}

void eth_bufq_consume(struct eth_chunk_pool *p, struct eth_bufq *q, uint32_t n)
{
	uint32_t drop;

	if (n > q->len)
		n = q->len;
	q->len -= n;
	q->head_off += n;
	drop = q->head_off / ETH_CHUNK_DATA;
	if (drop > q->n_chunks)
		drop = q->n_chunks; /* defensive: the offset ran past every chunk */
	for (uint32_t i = 0; i < drop; i++) {
		struct eth_chunk *c = q->head;
		q->head = c->next;
		chunk_put(p, c);
	}
	q->n_chunks -= drop;
	q->head_off -= drop * ETH_CHUNK_DATA;
	if (q->n_chunks < ETH_CHUNK_SKIP)
		q->skip_src = NULL; /* (else the same chunk: its index went down with n_chunks) */
	if (!q->head) {
		q->tail = NULL;
		q->head_off = 0;
	}
	if (q->cur) {
		if (q->cur_idx < drop)
			q->cur = NULL;
		else
			q->cur_idx -= drop;
	}
}

void eth_bufq_trim(struct eth_chunk_pool *p, struct eth_bufq *q)
{
	uint32_t keep;
	struct eth_chunk *c, *next;

	if (q->len == 0) {
		eth_bufq_free(p, q);
		return;
	}
	keep = (q->head_off + q->len + ETH_CHUNK_DATA - 1) / ETH_CHUNK_DATA;
	if (keep >= q->n_chunks)
		return;
	q->cur = NULL;
	q->skip_src = keep >= ETH_CHUNK_SKIP ? find(q, (keep - ETH_CHUNK_SKIP) * ETH_CHUNK_DATA) : NULL;
	c = find(q, (keep - 1) * ETH_CHUNK_DATA);
	q->tail = c;
	next = c->next;
	c->next = NULL;
	while (next) {
		c = next;
		next = c->next;
		chunk_put(p, c);
	}
	q->n_chunks = keep;
}

void eth_bufq_free(struct eth_chunk_pool *p, struct eth_bufq *q)
{
	struct eth_chunk *c = q->head, *next;

	while (c) {
		next = c->next;
		chunk_put(p, c);
		c = next;
	}
	q->head = q->tail = q->cur = q->skip_src = NULL;
	q->n_chunks = 0;
	q->head_off = 0;
	q->len = 0;
}

struct eth_chunk *eth_chunk_get(struct eth_chunk_pool *p)
{
	return chunk_get(p);
}

void eth_chunk_put(struct eth_chunk_pool *p, struct eth_chunk *c)
{
	chunk_put(p, c);
}
