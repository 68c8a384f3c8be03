#!/usr/bin/env python3
"""Call tree under one function of a `perf script` dump (perf record --call-graph dwarf):
   perf script -i perf.data > dump.txt; tree.py dump.txt FUNCTION DEPTH [MIN_PERCENT]
Inlined frames and tokio/core/std/alloc frames are folded into their callers."""
import re,collections,sys
samples=[];cur=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur is not None: samples.append(cur); cur=None
        continue
    if not line.startswith('\t') and not line.startswith('    '):
        cur=[]; continue
    if cur is not None: cur.append(re.sub(r'\+0x[0-9a-f]+','',line.strip().split(None,1)[-1]))
root=sys.argv[2]; depth=int(sys.argv[3]); minpct=float(sys.argv[4]) if len(sys.argv)>4 else 1.0
def clean(f):
    f=re.sub(r'\s*\(.*\)$','',f)
    f=re.sub(r'<[^<>]*>','',f); f=re.sub(r'<[^<>]*>','',f)
    return f[-70:]
sel=[]
for s in samples:
    idx=[i for i,f in enumerate(s) if root in f]
    if not idx: continue
    i=idx[-1]
    chain=[clean(f) for f in reversed(s[:i]) if 'inlined' not in f and not re.match(r'(tokio|core|std|alloc)::',re.sub(r'^<','',f))]
    sel.append(chain)
tot=len(sel); print('samples',tot)
def rec(prefix,items,d):
    c=collections.Counter(ch[d] if len(ch)>d else '<self>' for ch in items)
    for k,v in c.most_common():
        if 100*v/tot<minpct: break
        print('  '*d+f'{100*v/tot:5.1f}% {k}')
        if d+1<depth and k!='<self>':
            rec(prefix+[k],[ch for ch in items if len(ch)>d and ch[d]==k],d+1)
rec([],sel,0)
