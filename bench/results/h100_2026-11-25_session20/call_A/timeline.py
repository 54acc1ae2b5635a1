import sys
rows=[l.split() for l in open(sys.argv[1])]
d=[(int(a),int(b),int(c),int(s)) for a,b,c,s in rows]
t0=min(x[1] for x in d); t1=max(x[2] for x in d)
print(sys.argv[1], 'span us %.1f'%((t1-t0)/1e3))
durs=sorted((x[2]-x[1])/1e3 for x in d)
n=len(durs)
print(' block dur us: min %.1f p10 %.1f p50 %.1f p90 %.1f max %.1f'%(durs[0],durs[n//10],durs[n//2],durs[9*n//10],durs[-1]))
# short blocks
print(' blocks < 5us:', sum(1 for x in durs if x<5))
# active count over time, 1us bins
import math
nb=int(math.ceil((t1-t0)/1000))+1
act=[0]*nb
for _,a,b,_s in d:
    for k in range((a-t0)//1000, (b-t0)//1000+1): act[k]+=1
# print compressed timeline every 2us
print(' active per 2us:', ' '.join(str(max(act[i:i+2])) for i in range(0,nb,2)))
# start times distribution
starts=sorted((x[1]-t0)/1e3 for x in d)
print(' starts: first 5', ['%.1f'%s for s in starts[:5]], 'at 396th %.1f'%starts[min(395,n-1)], 'last %.1f'%starts[-1])
ends=sorted((x[2]-t0)/1e3 for x in d)
print(' ends: first %.1f, n-396th %.1f, n-132th %.1f, last %.1f'%(ends[0], ends[max(0,n-396)], ends[max(0,n-132)], ends[-1]))
# per sm counts
from collections import Counter
c=Counter(x[3] for x in d); print(' sms', len(c), 'blocks/sm min %d max %d'%(min(c.values()),max(c.values())))
