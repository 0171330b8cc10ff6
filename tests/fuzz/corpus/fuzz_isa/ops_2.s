gemv dest=0x03000 src=0x00800 wshape=2 fshape=0 +accm
softmax: cvo func=max src=0x00400 dst=0x00500 len=256
cvo func=exp src=0x00400 dst=0x00400 len=256 +sub_emax
cvo func=sum src=0x00400 dst=0x00501 len=256
cvo func=scale src=0x00400 dst=0x00400 len=256 +recip_scale
rmsnorm:
cvo func=sumsq src=0x00000 dst=0x00502 len=2048 +recip_scale
cvo func=add src=0x00503 dst=0x00502 len=0 +sreg
cvo func=rsqrt src=0 dst=0x00502 len=0 +sreg
cvo func=scale src=0x00000 dst=0x00600 len=2048
cvo func=mul src=0x00800 dst=0x00600 len=0x800
others:
