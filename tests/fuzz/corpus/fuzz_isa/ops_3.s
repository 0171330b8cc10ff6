cvo func=gelu src=0x03000 dst=0x03000 len=64 +relu
cvo func=sqrt src=0x00400 dst=0x00700 len=256
cvo func=sin src=0x00400 dst=0x00720 len=256
cvo func=cos src=0x00400 dst=0x00740 len=256 +accm
cvo func=recip src=0x00400 dst=0x00760 len=256 +async
cvo func=tanh src=0x02000 dst=0x02000 len=16
cvo func=lds src=0x00500 dst=0x00504 len=0
cvo func=lds src=0x00500 dst=0x00504 len=3
cvo func=max src=0x00503 dst=0x00504 len=0 +sreg
cvo func=exp src=0 dst=0x00504 len=0 +sreg +relu
cvo func=scale src=0x00503 dst=0x00504 len=0 +sreg +recip_scale
cvo func=mul src=0x00503 dst=0x00504 len=0 +sreg
store:
memcpy dest=0 src=0x00400 desc=2 fshape=2 +to_host
