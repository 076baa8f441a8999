# Bad inputs through the real CLI (issue 6): every case must end with its own
# message and exit code, never a signal (a crash exits 128+N, which fails the
# code check) or a hang (TIMEOUT). Exit codes follow docs/commands.md: 2 for config
# and usage errors and for a [model] init checkpoint that does not fit
# (damaged, or not the model's), 1 for runtime failures such as a damaged
# dataset. A failed run must leave no output file behind.
#   tests/bad_inputs/ini/*.ini    committed INI files, one fault each
#   tests/bad_inputs/make_inputs.sh  generates the IDX sets and safetensors
#                                 files at test time (fixture amp_bad_inputs)
include(${CMAKE_CURRENT_LIST_DIR}/../expect_fail.cmake)

set(AMP_BI_SRC ${CMAKE_CURRENT_SOURCE_DIR}/bad_inputs)
set(AMP_BI_GEN ${CMAKE_BINARY_DIR}/tests/bad_inputs)
set(AMP_BI_OUT ${CMAKE_BINARY_DIR}/tests/bad_input_runs)
set(AMP_BI_COUNT 0)

add_test(NAME bad_input_generate COMMAND sh ${AMP_BI_SRC}/make_inputs.sh ${AMP_BI_GEN})
set_tests_properties(bad_input_generate PROPERTIES FIXTURES_SETUP amp_bad_inputs
                     LABELS bad_input TIMEOUT 60)

# amp_bad_input(NAME CODE REGEX args...): `amptrain train args...` must exit
# with CODE and print REGEX on stderr. CODE 0 cases are the controls that
# show the generated inputs are right but for their one fault.
function(amp_bad_input name code regex)
  set(opts)
  if(NOT code EQUAL 0)
    set(opts --no-outputs ${AMP_BI_OUT}/${name})
  endif()
  amp_expect_fail(bad_input_${name} LABELS bad_input
    OPTIONS ${opts}
    CODE ${code}
    REGEX ${regex}
    COMMAND $<TARGET_FILE:amptrain> train ${ARGN} --out ${AMP_BI_OUT}/${name})
  set_tests_properties(bad_input_${name} PROPERTIES TIMEOUT 60
                       FIXTURES_REQUIRED amp_bad_inputs)
  math(EXPR n "${AMP_BI_COUNT} + 1")
  set(AMP_BI_COUNT ${n} PARENT_SCOPE)
endfunction()

# amp_bad_ini(NAME LINE REGEX [args...]): tests/bad_inputs/ini/NAME.ini is a
# config error (exit 2) reported at NAME.ini:LINE.
function(amp_bad_ini name line regex)
  amp_bad_input(ini_${name} 2 "^amptrain: [^ ]*/ini/${name}\\.ini:${line}: ${regex}"
                ${AMP_BI_SRC}/ini/${name}.ini ${ARGN})
  set(AMP_BI_COUNT ${AMP_BI_COUNT} PARENT_SCOPE)
endfunction()

# --- malformed INI lines ---------------------------------------------------
amp_bad_ini(no_equals 2 [=[cannot parse 'name': expected '\[section\]', 'key = value' or a comment]=])
amp_bad_ini(unterminated_section 3 [=[section header '\[data' has no closing '\]']=])
amp_bad_ini(junk_after_section 1 [=[unexpected 'junk' after the section header]=])
amp_bad_ini(bad_section_name 1 [=[bad section name \[ru n\]]=])
amp_bad_ini(empty_section 1 [=[bad section name \[\]]=])
amp_bad_ini(key_before_section 1 [=[key 'name' comes before any \[section\] header]=])
amp_bad_ini(missing_key 2 [=[missing key name before '=']=])
amp_bad_ini(bad_key_name 2 [=[bad key name 'l r']=])
amp_bad_ini(long_line 2 [=[line too long \(5007 characters. the limit is [0-9]+\)]=])
# --- duplicates: an error naming both lines, never a silent overwrite -------
amp_bad_ini(duplicate_key 4 [=[duplicate key 'lr' in \[optim\]. first set at line 2]=])
amp_bad_ini(duplicate_section 6 [=[duplicate section \[run\]. first at line 1]=])
# --- binary garbage, NUL bytes, UTF-16 --------------------------------------
amp_bad_ini(binary_garbage 1 [=[control byte 0x7f at column 1: this is not a text INI file]=])
amp_bad_ini(nul_byte 2 [=[control byte 0x00 at column 3]=])
amp_bad_ini(utf16 1 [=[control byte 0x00 at column 4]=])
# --- huge numbers, NaN and inf ----------------------------------------------
amp_bad_ini(huge_int 2 [=[\[train\] steps = '99999999999999999999': too large for a 64-bit integer]=])
amp_bad_ini(huge_negative_int 2 [=[\[train\] steps = '-99999999999999999999': too small for a 64-bit integer]=])
amp_bad_ini(huge_double 2 [=[\[optim\] lr = '1e400': too large for a double]=])
amp_bad_ini(tiny_double 2 [=[\[optim\] lr = '1e-400': too small for a double \(it would be 0\)]=])
amp_bad_ini(nan 2 [=[\[optim\] lr = 'nan': not a finite number]=])
amp_bad_ini(inf 2 [=[\[train\] loss_weight = 'inf': not a finite number]=])
amp_bad_ini(negative_inf 2 [=[\[optim\] grad_clip = '-inf': not a finite number]=])
amp_bad_ini(fractional_int 2 [=[\[train\] steps = '1\.5': not an integer]=])
amp_bad_ini(empty_value 2 [=[\[optim\] lr = '': empty value]=])
amp_bad_ini(bad_bool 2 [=[\[data\] shuffle = 'maybe': not a boolean]=])
amp_bad_ini(bad_choice 2 [=[\[run\] device = 'gpu': not a known choice. expected one of auto, cpu, cuda]=])
# --- negative and absurd sizes ----------------------------------------------
amp_bad_ini(negative_size 3 [=[\[data\] train_size = '-5': out of range. expected an integer in \[1, 16777216\]]=])
amp_bad_ini(negative_width 2 [=[\[model\] hidden = '64,-3': expected a comma-separated list of 1 to 64 widths]=])
amp_bad_ini(too_many_layers 2 [=[\[model\] hidden = '1,2,3.*': expected a comma-separated list of 1 to 64 widths]=])
amp_bad_ini(negative_seed 2 [=[\[run\] seed = '-1': out of range]=])
amp_bad_ini(batch_negative 2 [=[\[data\] batch_size = '-1': out of range. expected an integer in \[1, 65536\]]=])
amp_bad_ini(batch_huge 2 [=[\[data\] batch_size = '1000000000000': out of range. expected an integer in \[1, 65536\]]=])
amp_bad_ini(accumulate_huge 2 [=[\[train\] accumulate = '1000000': out of range. expected an integer in \[1, 4096\]]=])
# The decoder's Llama keys (models/gpt.c), one fault per file, each named
# at its line; the control trains the file with its fault fixed.
amp_bad_ini(llama_kv_not_dividing 8 [=[\[model\] n_kv_head = 3 does not divide n_head = 4 \(each key/value head serves an equal group of query heads\)$]=])
amp_bad_input(llama_kv_fixed 0 [=[run: val_loss [0-9.]+]=]
              ${AMP_BI_SRC}/ini/llama_kv_not_dividing.ini --set model.n_kv_head=2 --set data.dataset=text
              --set data.batch_size=2 --set data.eval_iters=1 --set train.steps=1)
amp_bad_ini(llama_kv_gpt2_names 7 [=[\[model\] n_kv_head = 2 needs names = llama \(GPT-2's fused c_attn has as many key/value heads as heads, 4\)$]=])
amp_bad_ini(llama_rope_odd_head 8 [=[\[model\] position = rope turns pairs of a head's values, but a head has n_embd / n_head = 12 / 4 = 3, an odd number$]=])
amp_bad_ini(llama_rope_theta_zero 6 [=[\[model\] rope_theta = '0': out of range; expected a number in \[1, 1e\+12\]$]=])
amp_bad_ini(llama_norm_eps_nan 6 [=[\[model\] norm_eps = 'nan': not a finite number; expected a number in \[0, 1\]$]=])
amp_bad_ini(llama_intermediate_negative 6 [=[\[model\] intermediate = '-8': out of range; expected an integer in \[0, 1048576\]$]=])
amp_bad_ini(llama_names_typo 4 [=[\[model\] names = 'lama': not a known choice; expected one of gpt2, llama; did you mean 'llama'\?$]=])
amp_bad_ini(llama_tie_not_bool 5 [=[\[model\] tie_embeddings = 'untied': not a boolean]=])
amp_bad_ini(llama_swiglu_gelu_tanh 6 [=[\[model\] activation = gelu_tanh, but mlp = swiglu has no GELU \(its gate is silu\): drop activation$]=])
amp_bad_ini(mlp_gelu_tanh_activation_gelu 5 [=[\[model\] activation = gelu disagrees with mlp = gelu_tanh \(the MLP's GELU is the tanh form\); drop activation, or write mlp = gelu$]=])

set(AMP_BI_TINY ${AMP_BI_SRC}/base_tiny.ini)
# The same faults through --set, located as "--set section.key".
amp_bad_input(set_batch_huge 2 [=[^amptrain: --set data\.batch_size: \[data\] batch_size = '1e12': not an integer]=]
              ${AMP_BI_TINY} --set data.batch_size=1e12)
amp_bad_input(set_nan 2 [=[^amptrain: --set optim\.lr: \[optim\] lr = 'NaN': not a finite number]=]
              ${AMP_BI_TINY} --set optim.lr=NaN)
# A batch inside its range but larger than the whole training set.
amp_bad_input(batch_over_dataset 2 [=[batch_size 65536 x \[train\] accumulate 1 = 65536 examples per step, but the training set has only 64]=]
              ${AMP_BI_TINY} --set data.batch_size=65536)
# Sizes each in range whose product is terabytes: a clear out-of-memory
# error before anything is touched, not an OOM kill. (Malloc would grant a
# model larger than RAM under overcommit; models/mlp.c checks RAM first.)
amp_bad_input(model_terabytes 1 [=[^amptrain: the model needs [0-9.]+ GiB of host memory .* but this machine has [0-9.]+ GiB; make \[model\] hidden or \[data\] batch_size smaller]=]
              ${AMP_BI_TINY} --set model.hidden=1048576,1048576)
amp_bad_input(data_terabytes 1 [=[^amptrain: tiny: out of memory for 16777216 x 65536 examples]=]
              ${AMP_BI_TINY} --set data.features=65536 --set data.train_size=16777216)

# --- empty files: valid, every key at its default ---------------------------
# (--set keeps the run short; the parse of the empty file is what is tested.)
foreach(name empty comments_only)
  amp_bad_input(ini_${name} 0 [=[test_acc [0-9.]+]=]
                ${AMP_BI_SRC}/ini/${name}.ini --set data.dataset=tiny --set data.train_size=256
                --set data.test_size=64 --set train.steps=1)
endforeach()

# --- truncated and mismatched dataset files (generated) ---------------------
# amp_bad_data(CASE REGEX): train on the IDX set make_inputs.sh wrote for CASE.
set(AMP_BI_IDX ${AMP_BI_SRC}/base_idx.ini)
function(amp_bad_data name regex)
  set(code 1)
  if(name STREQUAL "good")
    set(code 0)
  endif()
  amp_bad_input(data_${name} ${code} ${regex} ${AMP_BI_IDX} --set data.path=${AMP_BI_GEN}/data/${name})
  set(AMP_BI_COUNT ${AMP_BI_COUNT} PARENT_SCOPE)
endfunction()
set(damaged [=[. the file is damaged. reinstall dataset-fashion-mnist]=])
amp_bad_data(good [=[base_idx: test_acc [0-9.]+]=])
amp_bad_data(missing [=[/data/missing/train-images-idx3-ubyte\.gz: not found \(nor .*\). install Debian's dataset-fashion-mnist]=])
amp_bad_data(empty_gz "train-images-idx3-ubyte\\.gz: too short for an IDX header \\(0 bytes\\)${damaged}")
amp_bad_data(truncated_gz "train-images-idx3-ubyte\\.gz: truncated IDX header \\(11 of 16 bytes\\) \\(the gzip stream ends early\\)${damaged}")
amp_bad_data(corrupt_gz "train-images-idx3-ubyte\\.gz: read error: .*${damaged}")
amp_bad_data(count_mismatch [=[train-images-idx3-ubyte\.gz: 4 images but [^ ]*train-labels-idx1-ubyte\.gz: 3 labels]=])
amp_bad_data(wrong_magic [=[train-images-idx3-ubyte\.gz: bad magic 0x00000801 \(expected 0x00000803, an IDX image file\). it looks like a label file]=])
amp_bad_data(garbage [=[train-images-idx3-ubyte\.gz: bad magic 0x7f454c46 \(expected 0x00000803]=])
amp_bad_data(zero_rows "train-images-idx3-ubyte\\.gz: header declares 4 images of 0x2, which is not a usable dataset${damaged}")
amp_bad_data(huge_count "train-labels-idx1-ubyte\\.gz: truncated: header says 4294967295 labels \\(4294967295 bytes\\) but only 3 follow the 8-byte header${damaged}")
amp_bad_data(label_range "train-labels-idx1-ubyte\\.gz: label 10 at index 2 is out of range 0\\.\\.9${damaged}")
amp_bad_data(trailing "train-images-idx3-ubyte\\.gz: 3 trailing bytes after the images the header declares${damaged}")
amp_bad_data(short_pixels "train-images-idx3-ubyte\\.gz: truncated: header says 4 images of 2x2 \\(16 bytes\\) but only 10 follow the 16-byte header${damaged}")
amp_bad_data(raw_truncated "train-images-idx3-ubyte: truncated: header says 4 images of 2x2 \\(16 bytes\\) but only 5 follow the 16-byte header${damaged}")
amp_bad_data(test_dims [=[/data/test_dims: the train split has 2x2 images but the test split 3x3]=])

# --- [model] init safetensors files (generated) -----------------------------
# amp_bad_init(CASE REGEX): base_tiny.ini initialised from CASE.safetensors.
function(amp_bad_init name regex)
  set(code 2)
  if(name STREQUAL "good")
    set(code 0)
  endif()
  amp_bad_input(init_${name} ${code} ${regex}
                ${AMP_BI_TINY} --set model.init=${AMP_BI_GEN}/init/${name}.safetensors)
  set(AMP_BI_COUNT ${AMP_BI_COUNT} PARENT_SCOPE)
endfunction()
amp_bad_init(good [=[base_tiny: test_acc [0-9.]+]=])
amp_bad_init(missing_file [=[missing_file\.safetensors: cannot read: No such file or directory]=])
amp_bad_init(empty [=[empty\.safetensors: empty file \(0 bytes\)]=])
# a folder is read as a Hugging Face model folder (tests/cmake/hf.cmake)
amp_bad_init(a_directory [=[a_directory\.safetensors: no config\.json: \[model\] init takes a \.safetensors file or a Hugging Face model folder]=])
amp_bad_init(garbage [=[garbage\.safetensors: header length [0-9]+ exceeds the 100 MB limit \(not a safetensors file\?\)]=])
amp_bad_init(len_past_end [=[len_past_end\.safetensors: header length 1048576 exceeds the file size 320]=])
amp_bad_init(bad_json [=[bad_json\.safetensors: header, byte 264 \(line 1, column 256\): '\}' expected near end of file]=])
amp_bad_init(not_object [=[not_object\.safetensors: header: must be a JSON object, found an array]=])
amp_bad_init(duplicate_key [=[duplicate_key\.safetensors: header, byte [0-9]+ \(line 1, column [0-9]+\): duplicate object key near '"fc1\.bias"']=])
amp_bad_init(unknown_dtype [=[unknown_dtype\.safetensors: header: tensor 'fc1\.weight': unknown dtype "F24"]=])
amp_bad_init(int_dtype [=[int_dtype\.safetensors: 'fc1\.weight' has dtype I32. only F32, F16, BF16, F64 and I64 load as float32]=])
amp_bad_init(negative_shape [=[negative_shape\.safetensors: header: tensor 'fc1\.weight': shape entry -2 is negative]=])
amp_bad_init(shape_size [=[shape_size\.safetensors: header: tensor 'fc1\.weight': shape \[2, 3\] of F32 needs 24 bytes but data_offsets \[0, 20\] span 20]=])
amp_bad_init(offsets_past_end [=[offsets_past_end\.safetensors: tensor 'fc2\.bias' data_offsets \[48, 64\] run past the 56 data bytes]=])
amp_bad_init(wrong_shape [=[wrong_shape\.safetensors: 'fc1\.weight' has shape \[2, 2\] but the model expects \[2, 3\]$]=])
amp_bad_init(transposed [=[transposed\.safetensors: 'fc1\.weight' has shape \[3, 2\] but the model expects \[2, 3\] \(PyTorch nn\.Linear layout \[out, in\]\)]=])
amp_bad_init(missing_tensor [=[missing_tensor\.safetensors: no tensor 'fc1\.bias'. did you mean]=])
amp_bad_init(extra_tensor [=[extra_tensor\.safetensors: holds 5 tensors but the model has 4]=])

# --- token files for [data] dataset = tokens (generated) ---------------------
# amp_bad_tokens(CASE CODE REGEX TRAIN VAL [args...]): base_tokens.ini on the
# files make_inputs.sh wrote; every fault is exit 2 naming the file.
set(AMP_BI_TOK ${AMP_BI_GEN}/tokens)
function(amp_bad_tokens name code regex train val)
  amp_bad_input(tokens_${name} ${code} ${regex} ${AMP_BI_SRC}/base_tokens.ini
                --set data.train_tokens=${AMP_BI_TOK}/${train} --set data.val_tokens=${AMP_BI_TOK}/${val}
                ${ARGN})
  set(AMP_BI_COUNT ${AMP_BI_COUNT} PARENT_SCOPE)
endfunction()
set(tok_ok [=[base_tokens: val_loss [0-9.]+, ]=])
amp_bad_tokens(good 0 ${tok_ok} good.bin good.bin)
amp_bad_tokens(good_llmc 0 ${tok_ok} good_llmc.bin good.npy)
amp_bad_tokens(good_glob 0 ${tok_ok} good*.bin good.bin)
amp_bad_tokens(good_u32 0 ${tok_ok} good_u32.bin good_u4.npy)
amp_bad_tokens(id_range 2 [=[/tokens/id_range\.bin: token 37 \(byte 74\) is id 9, outside \[0, 8\) of \[data\] vocab_size = 8]=] id_range.bin good.bin)
amp_bad_tokens(id_range_llmc 2 [=[/tokens/id_range_llmc\.bin: token 5 \(byte 1034\) is id 8, outside \[0, 8\)]=] good.bin id_range_llmc.bin)
amp_bad_tokens(npy_negative 2 [=[/tokens/npy_negative\.npy: token 1 \(byte 132\) is id -3, outside \[0, 8\)]=] good.bin npy_negative.npy)
amp_bad_tokens(odd_length 2 [=[/tokens/odd_length\.bin: 129 bytes, an odd length for a raw \.bin of uint16 tokens]=] odd_length.bin good.bin)
amp_bad_tokens(empty_split 2 [=[\[data\] val_tokens = '[^']*/empty\.bin': an empty split: [^ ]*/tokens/empty\.bin holds no tokens]=] good.bin empty.bin)
amp_bad_tokens(too_short 2 [=[\[data\] train_tokens = '[^']*/short\.bin': 3 tokens in 1 file, too few for one window of \[model\] block_size = 4]=] short.bin good.bin)
amp_bad_tokens(no_match 2 [=[\[data\] train_tokens = '[^']*/nothing_\*\.bin': no such file \(nor files matching it as a glob\)]=] nothing_*.bin good.bin)
amp_bad_tokens(truncated_header 2 [=[/tokens/truncated_header\.bin: truncated llm\.c header \(100 of 1024 bytes\)]=] truncated_header.bin good.bin)
amp_bad_tokens(wrong_magic 2 [=[/tokens/wrong_magic\.llmc: not an llm\.c token shard: magic 12345 at byte 0 \(expected 20240520, or 20240801 for uint32 tokens\)]=] wrong_magic.llmc good.bin --set data.token_format=llmc)
amp_bad_tokens(wrong_version 2 [=[/tokens/wrong_version\.bin: llm\.c shard version 7 at byte 4 \(magic 20240520 is version 1\)]=] wrong_version.bin good.bin)
amp_bad_tokens(count_mismatch 2 [=[/tokens/count_mismatch\.bin: the llm\.c header \(byte 8\) says 70 tokens \(140 bytes after the 1024-byte header\) but 128 bytes follow it]=] count_mismatch.bin good.bin)
amp_bad_tokens(no_extension 2 [=[/tokens/no_extension\.dat: cannot tell the token format \(no llm\.c or \.npy magic, and the name does not end in \.bin\). set \[data\] token_format]=] no_extension.dat good.bin)
amp_bad_tokens(npy_dtype 2 [=[/tokens/npy_dtype\.npy: \.npy dtype '<f4' is not read: token ids are uint16]=] good.bin npy_dtype.npy)
amp_bad_tokens(npy_shape 2 [=[/tokens/npy_shape\.npy: \.npy shape of 2 dimensions: token ids are a 1-D array]=] npy_shape.npy good.bin)
amp_bad_tokens(npy_count 2 [=[/tokens/npy_count\.npy: the \.npy header says 65 tokens of 2 bytes but 128 bytes follow it at byte 128]=] npy_count.npy good.bin)
amp_bad_tokens(npy_dict 2 [=[/tokens/npy_dict\.npy: \.npy header, byte [0-9]+: expected a dict of 'descr', 'fortran_order' and 'shape']=] npy_dict.npy good.bin)
amp_bad_tokens(npy_truncated 2 [=[/tokens/npy_truncated\.npy: truncated \.npy header \(7 bytes\)]=] npy_truncated.npy good.bin)
amp_bad_tokens(npy_as_llmc 2 [=[/tokens/good\.npy: not an llm\.c token shard: magic [0-9-]+ at byte 0]=] good.npy good.bin --set data.token_format=llmc)
amp_bad_tokens(no_vocab_size 2 [=[^amptrain: \[data\] dataset = tokens needs \[data\] vocab_size]=] good.bin good.bin --set data.vocab_size=0)
amp_bad_input(tokens_no_val 2 [=[^amptrain: \[data\] dataset = tokens needs \[data\] val_tokens]=]
              ${AMP_BI_SRC}/base_tokens.ini --set data.train_tokens=${AMP_BI_TOK}/good.bin)

# --- [data] tokenizer (committed: tests/bad_inputs/tokenizer/, each a small
# byte-level BPE tokenizer.json with one fault; good.json is the control) ----
set(AMP_BI_TKZ ${AMP_BI_SRC}/tokenizer)
function(amp_bad_tokenizer name code regex file)
  amp_bad_input(tokenizer_${name} ${code} ${regex} ${AMP_BI_SRC}/base_tokens.ini
                --set data.train_tokens=${AMP_BI_TOK}/good.bin --set data.val_tokens=${AMP_BI_TOK}/good.bin
                --set data.vocab_size=0 --set data.tokenizer=${AMP_BI_TKZ}/${file} ${ARGN})
  set(AMP_BI_COUNT ${AMP_BI_COUNT} PARENT_SCOPE)
endfunction()
amp_bad_tokenizer(good 0 ${tok_ok} good.json)
amp_bad_tokenizer(missing 2 [=[^amptrain: \[data\] tokenizer: [^ ]*/tokenizer/missing\.json: cannot read: No such file or directory]=] missing.json)
amp_bad_tokenizer(truncated 2 [=[^amptrain: \[data\] tokenizer: [^ ]*/truncated\.json:1:[0-9]+: ]=] truncated.json)
amp_bad_tokenizer(normalizer 2 [=[/normalizer\.json: normalizer NFKC is not supported]=] normalizer.json)
amp_bad_tokenizer(metaspace 2 [=[/metaspace\.json: pre-tokenizer \(last step\) Metaspace is not supported]=] metaspace.json)
amp_bad_tokenizer(no_byte 2 [=[/no_byte\.json: the vocabulary has no token for byte 0x41 \("A"\)]=] no_byte.json)
amp_bad_tokenizer(small_vocab 2 [=[\[data\] vocab_size = 8 is smaller than the vocabulary of \[data\] tokenizer [^ ]*/good\.json \(300\)]=] good.json --set data.vocab_size=8)

message(STATUS "amptrain: ${AMP_BI_COUNT} bad-input cases")
