#!/usr/bin/env python3
"""Every kernel launch (<<<...>>>) and every asynchronous copy or memset in
the CUDA backend is followed by AMP_CHECK_LAUNCH before the next statement
that could launch, so a failed launch is reported where it happened (and,
under AMPTRAIN_CUDA_SYNC=1, a failed kernel too). Exit 0, or 1 naming each
unchecked launch. Usage: launch_checks.py FILE.cu..."""
import re
import sys

launch = re.compile(r'<<<|\bcudaMemcpy(?:2D)?Async\s*\(|\bcudaMemsetAsync\s*\(')
bad = 0
for path in sys.argv[1:]:
    lines = open(path, encoding='utf-8').read().split('\n')
    for i, line in enumerate(lines):
        code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split('//')[0])
        if code.lstrip().startswith(('*', '/*')) or not launch.search(code):
            continue
        # the statement's end, then the check within the next statements
        j = i
        while j < len(lines) and ';' not in lines[j].split('//')[0]:
            j += 1
        window = '\n'.join(lines[j + 1:j + 4])
        stmt = '\n'.join(lines[i:j + 1])
        if re.search(r'AMP_CHECK_LAUNCH|amp_cuda_after_launch|cudaStreamSynchronize', window + stmt) or 'launch-checked:' in stmt + lines[i - 1]:
            continue
        print(f'{path}:{i + 1}: a launch without AMP_CHECK_LAUNCH after it: {line.strip()}')
        bad += 1
print(f'launch_checks: {bad} unchecked launches')
sys.exit(1 if bad else 0)
