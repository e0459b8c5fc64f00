#!/usr/bin/env bash
# Least-privilege access for cluster/aws.yaml and cluster/gcp.yaml, created once per account/project:
#   SSH only from YOUR address range, intra-cluster traffic only between the cluster's nodes, and the head
#   node's role limited to launching/deleting this cluster's workers and writing the results bucket.
#
#   SSH_CIDR=203.0.113.7/32 BUCKET=my-bucket cluster/access.sh aws [--dry-run]     # then paste the printed
#   SSH_CIDR=203.0.113.7/32 BUCKET=my-bucket PROJECT=my-project cluster/access.sh gcp [--dry-run]   # ids into the YAML
#
# SSH_CIDR is required: your public address as a /32 (`curl -s https://checkip.amazonaws.com`), or your office
# range; 0.0.0.0/0 and any range wider than /16 are refused. --dry-run prints the commands without running them.
set -euo pipefail

provider="${1:-}"
dry_run=0
[[ "${2:-}" == "--dry-run" ]] && dry_run=1
here="$(cd "$(dirname "$0")" && pwd)"

die() { echo "cluster/access.sh: $*" >&2; exit 2; }
run() { if (( dry_run )); then printf '%q ' "$@"; echo; else "$@"; fi; }

[[ "$provider" == aws || "$provider" == gcp ]] || die "usage: SSH_CIDR=a.b.c.d/n BUCKET=... cluster/access.sh aws|gcp [--dry-run]"

# --- the SSH source range: required, an IPv4 CIDR, at most a /16, never the whole internet
cidr="${SSH_CIDR:-}"
[[ -n "$cidr" ]] || die "set SSH_CIDR to the address range allowed to SSH to the head, e.g. SSH_CIDR=\$(curl -s https://checkip.amazonaws.com)/32"
[[ "$cidr" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]{1,2})$ ]] || die "SSH_CIDR=$cidr is not an IPv4 CIDR like 203.0.113.7/32"
for i in 1 2 3 4; do (( BASH_REMATCH[i] <= 255 )) || die "SSH_CIDR=$cidr: ${BASH_REMATCH[i]} is not an address byte"; done
prefix="${BASH_REMATCH[5]}"
(( prefix <= 32 )) || die "SSH_CIDR=$cidr: the prefix must be <= 32"
(( prefix >= 16 )) || die "SSH_CIDR=$cidr opens SSH to $(( 1 << (32 - prefix) )) addresses; use your own address (/32) or a range of at most /16"
bucket="${BUCKET:-}"
[[ -n "$bucket" ]] || die "set BUCKET to the results bucket (the head may write only there, under smac/)"
[[ "$bucket" =~ ^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$ ]] || die "BUCKET=$bucket is not a bucket name (lowercase letters, digits, dots, dashes)"
policy="$(sed "s/YOUR_BUCKET/$bucket/g" "$here/iam/aws_policy.json")"

if [[ "$provider" == aws ]]; then
  region="${AWS_REGION:-us-west-2}"
  vpc="${VPC_ID:-$( (( dry_run )) && echo vpc-DEFAULT || aws ec2 describe-vpcs --region "$region" --filters Name=isDefault,Values=true --query 'Vpcs[0].VpcId' --output text)}"
  sg="$( (( dry_run )) && echo sg-NEW || aws ec2 create-security-group --region "$region" --vpc-id "$vpc" --group-name smac-rllib \
        --description "smac-rllib: SSH from $cidr, all traffic between the cluster's nodes" --query GroupId --output text)"
  (( dry_run )) && run aws ec2 create-security-group --region "$region" --vpc-id "$vpc" --group-name smac-rllib --description "smac-rllib: SSH from $cidr"
  run aws ec2 authorize-security-group-ingress --region "$region" --group-id "$sg" --protocol tcp --port 22 --cidr "$cidr"
  run aws ec2 authorize-security-group-ingress --region "$region" --group-id "$sg" --protocol -1 --source-group "$sg"
  run aws iam create-role --role-name smac-rllib-head --assume-role-policy-document \
      '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}'
  run aws iam put-role-policy --role-name smac-rllib-head --policy-name smac-rllib-autoscaler-and-results --policy-document "$policy"
  run aws iam create-instance-profile --instance-profile-name smac-rllib-head
  run aws iam add-role-to-instance-profile --instance-profile-name smac-rllib-head --role-name smac-rllib-head
  echo "cluster/aws.yaml: SecurityGroupIds: [$sg] on every node type (head IamInstanceProfile: smac-rllib-head is set)"
else
  project="${PROJECT:-}"
  [[ -n "$project" ]] || die "set PROJECT to your GCP project id"
  region="${GCP_REGION:-us-central1}"
  head="smac-rllib-head@$project.iam.gserviceaccount.com"
  run gcloud compute firewall-rules create smac-rllib-ssh --project "$project" --network default --direction INGRESS \
      --allow tcp:22 --source-ranges "$cidr" --target-tags smac-rllib-head
  run gcloud compute firewall-rules create smac-rllib-internal --project "$project" --network default --direction INGRESS \
      --allow tcp,udp,icmp --source-tags smac-rllib --target-tags smac-rllib
  # workers have no external IP: Cloud NAT gives them outbound access (docker pull, pip) and nothing inbound
  run gcloud compute routers create smac-rllib-nat-router --project "$project" --network default --region "$region"
  run gcloud compute routers nats create smac-rllib-nat --project "$project" --router smac-rllib-nat-router --region "$region" \
      --auto-allocate-nat-external-ips --nat-all-subnet-ip-ranges
  run gcloud iam roles create smacRllibAutoscaler --project "$project" --file "$here/iam/gcp_autoscaler_role.yaml"
  run gcloud iam service-accounts create smac-rllib-head --project "$project" --display-name "smac-rllib head (autoscaler, results)"
  run gcloud projects add-iam-policy-binding "$project" --member "serviceAccount:$head" \
      --role "projects/$project/roles/smacRllibAutoscaler" --condition None
  run gcloud storage buckets add-iam-policy-binding "gs://$bucket" --member "serviceAccount:$head" --role roles/storage.objectAdmin
  echo "cluster/gcp.yaml: provider.project_id: $project; the head's service account is $head"
  echo "Ray 2.60's GCP bootstrap also grants its own ray-sa-v1 broad roles; no node here runs as it (cluster/README.md)"
fi
