#ifndef AMP_TEXT_DEFAULTS_H
#define AMP_TEXT_DEFAULTS_H

/* Defaults that name the corpus amptrain ships: the key tables of the
 * core (config/settings.c) and of the GPT (models/gpt.c) read them, and
 * so does the text dataset (data/text.c). */

/* The corpus that ships in data/ (see docs/gpt-shakespeare.md, "Data"). */
#define AMP_TEXT_DEFAULT_FILE "tinyshakespeare.txt"
/* [model] block_size when not set: nanoGPT's shakespeare_char value. */
#define AMP_TEXT_DEFAULT_BLOCK 256
/* The shipped corpus's SHA-256, checked when it is read. */
#define AMP_TEXT_DEFAULT_SHA256 "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"

#endif
