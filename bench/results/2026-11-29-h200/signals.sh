set -u
G=$PWD/.device/gpumem; T=$PWD/tests/fixtures/torch/$(ls tests/fixtures/torch | grep pickle | head -1)
export TMPDIR=$(mktemp -d); cd $TMPDIR
cat > prog.py <<'P'
import torch, time
x = torch.empty(1 << 28, device="cuda"); torch.cuda.synchronize(); time.sleep(60)
P
for sig in TERM INT; do
  start=$SECONDS; timeout -s $sig 8 $G reuse-sim tune --trace $T --confirm --json -- python3 prog.py > tune.json 2> tune.err; rc=$?
  echo "tune --confirm under timeout -s $sig 8: exit $rc after $((SECONDS-start)) s; json docs: $(python3 -c 'import json,sys; json.load(open("tune.json")); print(1)' 2>&1 | tail -1); left in TMPDIR: $(ls -d gpumem-* 2>/dev/null | wc -l); python left: $(pgrep -f prog.py | wc -l); stderr: $(tail -1 tune.err | cut -c1-100)"
  start=$SECONDS; timeout -s $sig 2 $G reuse-sim replay --trace $T --execute -d 0 --json > rep.json 2> rep.err; rc=$?
  echo "replay --execute under timeout -s $sig 2: exit $rc after $((SECONDS-start)) s; json: $(python3 -c 'import json,sys; d=json.load(open("rep.json")); print(d.get("error",{}).get("status","no error"))' 2>&1 | tail -1); stderr: $(tail -1 rep.err | cut -c1-100)"
done
