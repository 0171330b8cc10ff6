gmev dest=0
gemv dest=0 bogus=1
cvo func=exp src=0 dst=0 len=8 src=1
gemv dest=0 src=0 wshape=0
cvo func=exp src=0x1g dst=0 len=1
.word 18446744073709551616
