#!/usr/bin/python3
"""Differential fuzzer for rrd::Rrd::apply against rrdtool 1.7.2 (helper h1).

Random schemas and update sequences go through `rrdtool create` + `rrdtool updatev` (one call
per argument) and through the `replay` example; updatev lines, error texts and the full
state read from the .rrd bytes (x86-64 layout: live_head, pdp_prep, cdp_prep, rows as raw
f64 bits) must be identical. Usage: replay_diff.py FIRST_SEED COUNT (TZ=UTC LC_ALL=C;
REPLAY=path to the built example, default target/release/examples/replay)."""
import struct, sys
def fmt(x):
    return "%016x(%r)" % (struct.unpack("<Q", struct.pack("<d", x))[0], x)
def dump(path, out):
    d = open(path, 'rb').read()
    ds_cnt, rra_cnt, step = struct.unpack_from('<QQQ', d, 24)
    off = 128
    ds = []
    for i in range(ds_cnt):
        name = d[off:off+20].split(b'\0')[0].decode(); dst = d[off+20:off+40].split(b'\0')[0].decode()
        ds.append((name, dst)); off += 120
    rra = []
    for r in range(rra_cnt):
        cf = d[off:off+20].split(b'\0')[0].decode(); row_cnt, pdp_cnt = struct.unpack_from('<QQ', d, off+24)
        rra.append((cf, row_cnt, pdp_cnt)); off += 120
    last_up, usec = struct.unpack_from('<qq', d, off); off += 16
    out.append("last_up %d %d" % (last_up, usec))
    for i in range(ds_cnt):
        last_ds = d[off:off+30].split(b'\0')[0].decode('latin1')
        unkn, = struct.unpack_from('<Q', d, off+32); val, = struct.unpack_from('<d', d, off+40)
        out.append("ds %d last_ds=%r unkn=%d val=%s" % (i, last_ds, unkn, fmt(val))); off += 112
    for r in range(rra_cnt):
        for i in range(ds_cnt):
            val, = struct.unpack_from('<d', d, off); unkn, = struct.unpack_from('<Q', d, off+8)
            prim, sec = struct.unpack_from('<dd', d, off+64)
            out.append("cdp %d %d val=%s unkn=%d prim=%s sec=%s" % (r, i, fmt(val), unkn, fmt(prim), fmt(sec)))
            off += 80
    cur = []
    for r in range(rra_cnt):
        cur.append(struct.unpack_from('<Q', d, off)[0]); off += 8
    for r in range(rra_cnt):
        cf, row_cnt, pdp_cnt = rra[r]
        rows = []
        for k in range(row_cnt):
            row = (cur[r] + 1 + k) % row_cnt
            vals = struct.unpack_from('<%dd' % ds_cnt, d, off + row*ds_cnt*8)
            rows.append(" ".join(fmt(v) for v in vals))
        out.append("rra %d: %s" % (r, " | ".join(rows)))
        off += row_cnt*ds_cnt*8
    assert off == len(d), (off, len(d))
import random, subprocess, sys, os, re
REPLAY = os.environ.get('REPLAY', 'target/release/examples/replay')
ENV = dict(os.environ, TZ='UTC', LC_ALL='C')
F = '/tmp/replay_diff%d.rrd' % os.getpid()

TEMPLATES = {}

def gen(rnd):
    step = rnd.choice([1, 2, 5, 10, 60, 300, 7, 3600])
    start = 1700000000 + rnd.randrange(0, 1000)
    nds = rnd.randint(1, 5)
    ds = []
    types = ['GAUGE', 'COUNTER', 'DERIVE', 'ABSOLUTE', 'DCOUNTER', 'DDERIVE']
    for i in range(nds):
        t = rnd.choice(types)
        hb = rnd.choice([step, 2 * step, 3 * step, step // 2 + 1, 10 * step])
        mn = rnd.choice(['U', 'U', '0', '-100', '5'])
        mx = rnd.choice(['U', 'U', '100', '1000', '1e9'])
        ds.append((f'd{i}', t, hb, mn, mx))
    if rnd.random() < 0.3 and nds >= 1:
        names = [d[0] for d in ds]
        a, b = names[0], names[-1]
        e = rnd.choice([f'{a},2,*', f'{a},{b},+', f'{a},UN,0,{a},IF', f'{b},10,/', f'{a},{b},MAX', f'{a},{b},MINNAN',
                        f'{a},{b},LT', f'{a},{b},ADDNAN', f'{a},0,100,LIMIT', f'{a},{b},2,AVG', f'{a},SQRT', f'{a},{b},%',
                        f'{a},{b},-,ABS', f'{a},{b},EXC,/', f'{a},{b},ATAN2', f'{a},LOG', f'{a},{b},3,-,POW', f'{a},{b},GE,{a},{b},IF',
                        f'{a},+', f'{a},{b}', f'{a},FLOOR,{b},CEIL,+', f'{a},INF,MIN', f'{a},{b},2,SORT,-', f'{a},{b},EQ'])
        ds.append(('cc', 'COMPUTE', e))
    rras = []
    for r in range(rnd.randint(1, 4)):
        rras.append((rnd.choice(['AVERAGE', 'MIN', 'MAX', 'LAST']), rnd.choice([0, 0.5, 0.3, 0.99, 0.25]),
                     rnd.choice([1, 1, 2, 3, 5]), rnd.choice([1, 2, 3, 5, 10])))
    ups = []
    t = float(start)
    cnt = {d[0]: rnd.randrange(0, 2**32) for d in ds}
    subsec = rnd.random() < 0.4
    for k in range(rnd.randint(1, 40)):
        r = rnd.random()
        if r < 0.05:
            dt = 0
        elif r < 0.15:
            dt = rnd.randint(step, 20 * step)
        elif r < 0.18:
            dt = rnd.randint(20 * step, 200 * step)
        else:
            dt = rnd.randint(1, 2 * step)
        t += dt
        if subsec:
            ts = '%.6f' % (t + rnd.choice([0, 0.25, 0.5, 0.123456, 0.999999, 0.1]))
            ts = ts.rstrip('0').rstrip('.') if rnd.random() < 0.5 else ts
        else:
            ts = str(int(t))
        vals = []
        for d in ds:
            if d[1] == 'COMPUTE':
                continue
            if rnd.random() < 0.1:
                vals.append('U'); continue
            if rnd.random() < 0.02:
                vals.append(rnd.choice(['abc', '', '1.5', '-5', '1e400', '5x', ' 7', 'nan', '-inf', 'Ux', '00012'])); continue
            ty = d[1]
            if ty == 'GAUGE' or ty == 'ABSOLUTE':
                vals.append(rnd.choice(['%d' % rnd.randint(-50, 2000), '%.2f' % rnd.uniform(0, 150), '%.17g' % rnd.uniform(-1, 1e6), '1e3', '0.1']))
            elif ty == 'COUNTER':
                c = cnt[d[0]] + rnd.randint(0, 5000)
                if rnd.random() < 0.05: c = rnd.randint(0, 100)
                if rnd.random() < 0.03: c = 2**64 - rnd.randint(1, 100)
                cnt[d[0]] = c; vals.append(str(c))
            elif ty == 'DERIVE':
                vals.append(str(rnd.randint(-1000, 100000)))
            else:
                vals.append(rnd.choice(['%.3f' % rnd.uniform(-100, 1e5), '%d' % rnd.randint(0, 10000)]))
        ups.append(ts + ':' + ':'.join(vals))
    tmpl = None
    if rnd.random() < 0.3:
        names = [d[0] for d in ds]
        k = rnd.randint(1, len(names))
        tmpl = rnd.sample(names, k)
        ups = [u.split(':')[0] + ':' + ':'.join(rnd.choice(['1', '2.5', 'U', '100', str(rnd.randint(0, 10**6))]) for _ in tmpl) for u in ups]
        tmpl = ':'.join(tmpl)
    TEMPLATES[(step, start, len(ups))] = tmpl
    return step, start, ds, rras, ups

def run_rrdtool(step, start, ds, rras, ups):
    if os.path.exists(F): os.remove(F)
    args = ['rrdtool', 'create', F, '--start', str(start), '--step', str(step)]
    for d in ds:
        args.append(f'DS:{d[0]}:{d[1]}:{d[2]}' if d[1] == 'COMPUTE' else f'DS:{d[0]}:{d[1]}:{d[2]}:{d[3]}:{d[4]}')
    for r in rras:
        args.append(f'RRA:{r[0]}:{r[1]}:{r[2]}:{r[3]}')
    subprocess.run(args, check=True, env=ENV)
    out = []
    for u in ups:
        out.append('update ' + u)
        t = TEMPLATES.get((step, start, len(ups)))
        targs = ['-t', t] if t else []
        p = subprocess.run(['rrdtool', 'updatev', F] + targs + ['--', u], capture_output=True, text=True, env=ENV)
        for l in p.stdout.splitlines():
            if l.startswith('return_value'): continue
            out.append(l)
        for l in p.stderr.splitlines():
            l = l.replace('ERROR: ', '', 1).replace(F + ': ', '', 1)
            out.append('error ' + l)
    dump(F, out)
    return out

def run_replay(step, start, ds, rras, ups):
    lines = [f'step {step}', f'start {start}']
    for d in ds:
        lines.append(f'ds {d[0]} {d[1]} {d[2]}' if d[1] == 'COMPUTE' else f'ds {d[0]} {d[1]} {d[2]} {d[3]} {d[4]}')
    for r in rras:
        lines.append(f'rra {r[0]} {r[1]} {r[2]} {r[3]}')
    t = TEMPLATES.get((step, start, len(ups)))
    if t:
        lines.append('template ' + t)
    for u in ups:
        lines.append('update ' + u)
    p = subprocess.run([REPLAY], input='\n'.join(lines) + '\n', capture_output=True, text=True)
    if p.returncode != 0:
        return ['CRASH ' + p.stderr]
    return p.stdout.splitlines()

def norm(lines):
    return [re.sub(r'\(([^()]*)\)', '', l) for l in lines]

if __name__ == '__main__':
    seed0 = int(sys.argv[1]); n = int(sys.argv[2])
    bad = 0
    for s in range(seed0, seed0 + n):
        sc = gen(random.Random(s))
        a = run_rrdtool(*sc); b = run_replay(*sc)
        if norm(a) != norm(b):
            bad += 1
            print('MISMATCH seed', s)
            import difflib
            for l in list(difflib.unified_diff(a, b, 'rrdtool', 'ringlet', lineterm='', n=2))[:40]:
                print(l)
            if bad >= 3: break
    print('done', n, 'bad', bad)

def show(seed):
    sc = gen(random.Random(seed))
    print(sc[:4])
    a = run_rrdtool(*sc); b = run_replay(*sc)
    import difflib
    for l in difflib.unified_diff(a, b, 'rrdtool', 'ringlet', lineterm='', n=1000):
        print(l)
