shapes:
memset cache=fmap entry=0 a=2048 b=1 c=1
memset cache=fmap entry=1 a=2048 b=4 c=1
memset cache=fmap entry=2 a=256 b=1 c=1
memset cache=weight entry=0 a=256 b=2048 c=0
memset cache=weight entry=1 a=16 b=0x800 c=1
memset cache=weight entry=2 a=64 b=2048 c=2
.word 0x3030001000100010
load:
memcpy dest=0x00000 src=0 desc=0 fshape=0 +from_host
memcpy dest=4096 src=0 desc=1 fshape=1 +from_host +async
memcpy dest=0x00800 src=0x00000 desc=0 fshape=0
memcpy fshape=3 desc=0 src=0x00000 dest=0x00900
matmul:
gemv dest=0x00400 src=0x00000 wshape=0 fshape=0 +w_scale +findemax
gemm dest=0x02000 src=0x01000 wshape=1 fshape=1
