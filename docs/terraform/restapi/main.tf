# A Cairn cluster managed with the Mastercard restapi provider.
#
# restapi_object POSTs `data` to `path`, reads the answer's `id`, then reads, PUTs and DELETEs
# `path/{id}`. Cairn answers each with the cluster (or nothing, for a delete) once the operation
# the request started has ended, because every request carries `Prefer: wait=300`: `terraform
# apply` returns when the cluster is available, and `terraform destroy` when it is gone. Requests
# that start no operation (every read, a PUT that changes nothing) ignore the preference.
#
#   terraform init
#   terraform apply -var cairn_url=http://127.0.0.1:8080 -var cairn_token=cairn_...

terraform {
  required_providers {
    restapi = {
      source  = "Mastercard/restapi"
      version = ">= 1.20"
    }
  }
}

variable "cairn_url" {
  description = "cairnd's API address."
  type        = string
  default     = "http://127.0.0.1:8080"
}

variable "cairn_token" {
  description = "An API token of scope admin (cairnd token create --name terraform --scope admin)."
  type        = string
  sensitive   = true
}

variable "engine_version" {
  description = "Change it (to a version GET /v1/engine-versions lists as a target) to upgrade in place."
  type        = string
  default     = "8.0"
}

provider "restapi" {
  uri                  = var.cairn_url
  write_returns_object = true
  id_attribute         = "id"
  create_method        = "POST"
  update_method        = "PUT"
  destroy_method       = "DELETE"
  headers = {
    "Authorization" = "Bearer ${var.cairn_token}"
    "Content-Type"  = "application/json"
    # Answer once the operation has ended (at most cairnd's --max-wait, 300 s by default).
    "Prefer" = "wait=300"
  }
}

# The spec, as Cairn stores it and GET returns it: each field comes back exactly as sent, or
# as its default when left out, so the next plan shows no change. Fields that can never change
# (id, cluster_mode) get 400 if edited: replace the resource instead.
locals {
  cluster = {
    id                 = "orders"
    description        = "checkout cache"
    engine             = "valkey"
    engine_version     = var.engine_version
    node_type          = "cache.t3.micro"
    cluster_mode       = "enabled"
    num_shards         = 3
    replicas_per_shard = 1
    multi_az           = true
    maintenance_window = "sun:05:00-sun:06:00"
    parameters = {
      "maxmemory-policy" = "allkeys-lru"
    }
    tags = {
      team         = "checkout"
      "managed-by" = "terraform"
    }
  }
}

resource "restapi_object" "orders" {
  path         = "/v1/clusters"
  create_path  = "/v1/clusters"
  read_path    = "/v1/clusters/{id}"
  update_path  = "/v1/clusters/{id}"
  destroy_path = "/v1/clusters/{id}"
  data         = jsonencode(local.cluster)
  force_new    = ["id", "cluster_mode"]
}

output "cluster_status" {
  value = restapi_object.orders.api_data.status
}

output "configuration_endpoint" {
  description = "Where cluster-aware clients start; the engine password is at GET /v1/clusters/orders/auth."
  value       = jsondecode(restapi_object.orders.api_response).endpoints.configuration
}
