#!/usr/bin/env bash
# Images from folders end to end: a folder of class folders of PNG and JPEG files (make_images.py:
# 12,000 Fashion-MNIST training images written by Pillow), imported on N ranks by `cohort data
# import images` (resized to 32x32 RGB, a tenth held out by a hash of each path), then the small
# ResNet trained on N ranks (default 2) with random crops and flips.
#   examples/image-folder/run.sh [RANKS] [--set section.key=value ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
if [ ! -d data/images-val ]; then
  [ -d data/images ] || /usr/bin/python3 "$here/make_images.py" data/images
  "$cohort" launch -n "$ranks" -- "$cohort" data import images data/images --size 32,32 \
    --val-fraction 0.1 --out data/images-train --val-out data/images-val >&2
fi
launch_train "$here/image-folder.ini"
